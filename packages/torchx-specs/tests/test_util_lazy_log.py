"""torchx.util.log: loggers that import `logging` only when a record can be emitted."""

import subprocess
import sys
import textwrap


def _run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        check=True,
    )


def test_records_below_the_root_level_do_not_import_logging() -> None:
    proc = _run(
        """
        import sys
        from torchx.util.log import get_logger
        log = get_logger("torchx.demo")
        log.debug("quiet %s", 1)
        log.info("quiet")
        print("logging" in sys.modules)
        """
    )
    assert proc.stdout.strip() == "False"
    assert proc.stderr == ""


def test_warning_reaches_logging_like_a_plain_logger() -> None:
    proc = _run(
        """
        from torchx.util.log import get_logger
        log = get_logger("torchx.demo")
        log.warning("loud %s", "value")
        print(log.name, log.getEffectiveLevel())
        """
    )
    assert proc.stdout.split() == ["torchx.demo", "30"]
    assert proc.stderr == "loud value\n"  # logging's last-resort handler


def test_declared_root_level_lets_info_through_once_configured() -> None:
    proc = _run(
        """
        import sys
        from torchx.util.log import get_logger, set_root_level_before_import
        set_root_level_before_import("INFO")
        log = get_logger("torchx.demo")
        log.debug("dropped")
        print("logging" in sys.modules)
        import logging
        logging.basicConfig(level="INFO", format="%(levelname)s %(message)s")
        log.info("shown")
        """
    )
    assert proc.stdout.strip() == "False"
    assert proc.stderr == "INFO shown\n"


def test_configured_logger_settings_go_to_the_real_logger() -> None:
    proc = _run(
        """
        import logging
        from torchx.util.log import get_logger
        log = get_logger("torchx.demo")
        log.propagate = False
        print(logging.getLogger("torchx.demo").propagate)
        """
    )
    assert proc.stdout.strip() == "False"
