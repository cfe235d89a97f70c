"""The CLI configures `logging` when it is needed (a torchx logger used, an SDK or a
plugin about to run), honouring --log_level: a plugin's logger logs in the CLI's format,
at the chosen level."""

import subprocess
import sys
import textwrap


def _cli(code: str, tmp: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp,
    )


def test_plugin_logging_imported_after_start_up_uses_the_cli_format(tmp_path: object) -> None:
    proc = _cli(
        """
        import sys
        import argparse
        from torchx.cli import main

        def late_plugin_logs(args):
            import logging
            logging.getLogger("some.plugin").info("hello from %s", "plugin")

        main._dispatch(argparse.Namespace(log_level="INFO", func=late_plugin_logs))
        """,
        str(tmp_path),
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.startswith("torchx ") and proc.stderr.rstrip().endswith(
        "INFO     hello from plugin"
    )


def test_log_level_filters_records_of_lazily_configured_logging(tmp_path: object) -> None:
    proc = _cli(
        """
        import argparse
        from torchx.cli import main

        def logs(args):
            import logging
            logging.getLogger("x").info("hidden")
            logging.getLogger("x").error("shown")

        main._dispatch(argparse.Namespace(log_level="ERROR", func=logs))
        """,
        str(tmp_path),
    )
    assert proc.returncode == 0, proc.stderr
    assert "hidden" not in proc.stderr
    assert proc.stderr.rstrip().endswith("ERROR    shown")
