"""`sandlot gc`: list and remove the sandlot containers a crashed program left behind."""

from __future__ import annotations

import argparse
import json
import sys
from datetime import UTC, datetime
from typing import Any


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "gc",
        help="remove sandlot containers left behind",
        description="List the Docker containers labelled as sandlot's and remove those left "
        "behind: made with on_close=delete by a program that is no longer running; then the "
        "images sandlot.fork committed that no container uses any more. "
        "Containers kept on purpose (on_close=stop or leave) need --all; containers whose "
        "program still runs on this host need --force.",
        epilog="examples:\n"
        "  sandlot gc --dry-run\n"
        "  sandlot gc --older-than 2h\n"
        "  sandlot gc --all --older-than 7d --docker-host unix:///run/user/1000/docker.sock\n",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    engine = parser.add_argument_group("docker engine")
    engine.add_argument("--docker-host", help="engine address (default: the client's own)")
    engine.add_argument("--context", help="docker CLI context to use instead of --docker-host")
    engine.add_argument("--docker-binary", default="docker", help="the docker client program")
    parser.add_argument(
        "--older-than", metavar="DURATION",
        help="only containers created at least this long ago (30m, 2h, 7d, 1h30m)",
    )  # fmt: skip
    parser.add_argument("--dry-run", action="store_true", help="list, remove nothing")
    parser.add_argument(
        "--all", action="store_true", help="also containers made with on_close=stop or leave"
    )
    parser.add_argument(
        "--force", action="store_true", help="also containers whose program still runs"
    )
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.set_defaults(handler=run)


async def run(args: argparse.Namespace) -> int:
    from ..backends.docker import gc
    from ..backends.docker.cli import DockerCLI
    from ..errors import ConfigurationError

    if args.docker_host and args.context:
        raise ConfigurationError("give --docker-host or --context, not both")
    older_than = gc.parse_duration(args.older_than) if args.older_than else None
    cli = DockerCLI(args.docker_binary, docker_host=args.docker_host, context=args.context)
    now = datetime.now(UTC)
    containers = await gc.list_containers(cli)
    rows: list[dict[str, Any]] = []
    doomed: list[gc.LeftContainer] = []
    for container in containers:
        verdict = container.verdict(
            now, older_than=older_than, include_kept=args.all, include_live=args.force
        )
        if verdict == "remove":
            doomed.append(container)
        rows.append({
            "name": container.name, "id": container.id, "state": container.state,
            "age": gc.describe_age(container, now), "on_close": container.on_close,
            "owner": container.owner, "action": verdict,
        })  # fmt: skip
    failures: list[str] = [] if args.dry_run else await gc.remove(cli, doomed)
    # Fork images (sandlot.fork) once no container uses them: after the containers went.
    images = await gc.fork_images(cli, include_live=args.force)
    if not args.dry_run:
        failures += await gc.remove_images(cli, images)
    verb = "would remove" if args.dry_run else "removed"
    if args.json:
        print(json.dumps({
            "dry_run": args.dry_run, "containers": rows,
            verb.replace(" ", "_"): [c.name for c in doomed], "errors": failures,
            "fork_images": images,
        }, indent=2))  # fmt: skip
    else:
        _table(rows)
        print(f"sandlot gc: {verb} {len(doomed)} of {len(rows)} sandlot container(s)")
        if images:
            print(f"sandlot gc: {verb} {len(images)} unused fork image(s)")
        for line in failures:
            print(f"sandlot gc: {line}", file=sys.stderr)
    return 1 if failures else 0


def _table(rows: list[dict[str, Any]]) -> None:
    if not rows:
        return
    columns = ["name", "state", "age", "on_close", "action"]
    widths = {c: max(len(c), *(len(str(r[c])) for r in rows)) for c in columns[:-1]}
    print("  ".join(c.upper().ljust(widths.get(c, 0)) for c in columns))
    for row in rows:
        print("  ".join(str(row[c]).ljust(widths.get(c, 0)) for c in columns))
