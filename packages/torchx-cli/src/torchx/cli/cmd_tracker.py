"""``torchx tracker list ...``: query the experiment tracker configured for this project.

The first tracker of ``TORCHX_TRACKERS`` (or ``[torchx:tracker]`` in .torchxconfig) is used.
"""

import argparse
import logging

from torchx.cli._table import format_table
from torchx.cli.cmd_base import SubCommand
from torchx.cli.errors import CliError
from torchx.runner.api import get_configured_trackers
from torchx.tracker.api import TrackerLoadError, build_tracker

TYPE_CHECKING = False
if TYPE_CHECKING:
    from torchx.tracker.api import TrackerBase

__all__ = ["CmdTracker"]

logger: logging.Logger = logging.getLogger(__name__)


class CmdTracker(SubCommand):
    """``torchx tracker list {jobs,metadata,artifacts,lineage} ...``."""

    def __init__(self) -> None:
        self._parser: argparse.ArgumentParser | None = None

    @property
    def tracker(self) -> "TrackerBase":
        """The first configured tracker; none configured is a one-line error."""

        configured = get_configured_trackers()
        if not configured:
            raise CliError(
                "no tracker configured; set TORCHX_TRACKERS=NAME (and"
                " TORCHX_TRACKER_<NAME>_CONFIG) or add a [torchx:tracker] section to"
                " .torchxconfig (see `torchx plugins` for installed trackers)"
            )
        problems: list[str] = []
        for name, config in configured.items():
            try:
                tracker = build_tracker(name, config)
            except TrackerLoadError as e:
                problems.append(str(e))
                continue
            logger.debug("querying tracker %s", tracker)
            return tracker
        raise CliError("; ".join(problems))

    def add_arguments(self, subparser: argparse.ArgumentParser) -> None:
        self._parser = subparser
        commands = subparser.add_subparsers(dest="tracker_cmd", metavar="COMMAND")
        list_parser = commands.add_parser("list", help="list tracked jobs, metadata or artifacts")
        what = list_parser.add_subparsers(dest="tracker_list", metavar="WHAT", required=True)

        jobs = what.add_parser("jobs", help="run ids of tracked jobs")
        jobs.add_argument("--parent-run-id", type=str, help="only children of this run id")

        metadata = what.add_parser("metadata", help="metadata of one run")
        metadata.add_argument("RUN_ID", type=str, help="job run id")

        artifacts = what.add_parser("artifacts", help="artifacts of one run")
        artifacts.add_argument("--artifact", type=str, help="only the artifact with this name")
        artifacts.add_argument("RUN_ID", type=str, help="job run id")

        lineage = what.add_parser("lineage", help="sources and descendants of one run (one level)")
        only = lineage.add_mutually_exclusive_group()
        only.add_argument("--sources-only", action="store_true", help="only the run's sources")
        only.add_argument(
            "--descendants-only", action="store_true", help="only the runs derived from it"
        )
        lineage.add_argument(
            "--artifact", type=str, help="only links through the artifact with this name"
        )
        lineage.add_argument("RUN_ID", type=str, help="job run id")

    def run(self, args: argparse.Namespace) -> None:
        if args.tracker_cmd is None:
            if self._parser is not None:
                self._parser.print_help()
            return
        what = args.tracker_list
        if what == "lineage":
            print(
                format_table(_lineage_rows(self.tracker, args), ["RELATION", "RUN ID", "ARTIFACT"])
            )
        elif what == "jobs":
            filters = {"parent_run_id": args.parent_run_id} if args.parent_run_id else {}
            job_ids = self.tracker.run_ids(**filters)
            print(format_table([[job_id] for job_id in job_ids], ["JOB ID"]))
        elif what == "metadata":
            metadata = self.tracker.metadata(args.RUN_ID)
            print(format_table([[k, str(v)] for k, v in metadata.items()], ["KEY", "VALUE"]))
        elif what == "artifacts":
            found = list(self.tracker.artifacts(args.RUN_ID).values())
            if args.artifact:
                found = [a for a in found if a.name == args.artifact]
            rows = [[a.name, a.path, str(a.metadata)] for a in found]
            print(format_table(rows, ["ARTIFACT", "PATH", "METADATA"]))


def _lineage_rows(tracker: "TrackerBase", args: argparse.Namespace) -> list[list[str]]:
    """``[relation, run id, artifact]`` rows of a run's direct sources and descendants,
    read through the tracker contract so that any tracker backend answers."""
    run_id: str = args.RUN_ID
    artifact: str | None = args.artifact
    rows: list[list[str]] = []
    if not args.descendants_only:
        for source in tracker.sources(run_id, artifact):
            rows.append(["source", source.source_run_id, source.artifact_name or ""])
    if not args.sources_only:
        for child in tracker.run_ids(parent_run_id=run_id):
            for link in tracker.sources(child, artifact):
                if link.source_run_id == run_id:
                    rows.append(["descendant", child, link.artifact_name or ""])
                    break
    return rows
