"""Finding and removing sandlot containers that a crashed or killed program left behind.

A container is garbage when its label says `on_close=delete` (its program meant to remove it)
and the program that made it is gone. Containers made with `stop` or `leave` were kept on
purpose and are only removed with `include_kept`; those whose owner still runs on this host are
in use and only removed with `include_live`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from ...errors import ConfigurationError, ProviderError
from . import handover, labels
from .cli import DockerCLI

_DURATION = re.compile(r"(\d+)([smhdw])")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_duration(text: str) -> timedelta:
    """`90s`, `15m`, `2h`, `7d`, `1w` or combinations like `1h30m`."""
    cleaned = text.strip().lower()
    parts = _DURATION.findall(cleaned)
    if not cleaned or "".join(n + u for n, u in parts) != cleaned:
        raise ConfigurationError(
            f"invalid duration {text!r}: use a number with s, m, h, d or w (e.g. 30m, 2h, 1h30m)"
        )
    return timedelta(seconds=sum(int(n) * _UNITS[u] for n, u in parts))


@dataclass(frozen=True)
class LeftContainer:
    """A sandlot-labelled container as `docker inspect` describes it."""

    id: str
    name: str
    state: str
    on_close: str
    created: datetime | None
    owner: str
    owner_alive: bool | None
    session: str = ""

    def age(self, now: datetime) -> timedelta | None:
        return None if self.created is None else now - self.created

    def verdict(
        self,
        now: datetime,
        *,
        older_than: timedelta | None,
        include_kept: bool,
        include_live: bool,
    ) -> str:
        """`remove`, or why the container is kept."""
        if self.on_close != "delete" and not include_kept:
            return f"keep: on_close={self.on_close or '?'} (kept on purpose; --all removes it)"
        if self.owner_alive and not include_live:
            return "keep: its program is still running (--force removes it)"
        if older_than is not None:
            age = self.age(now)
            if age is None:
                return "keep: no creation time label"
            if age < older_than:
                return f"keep: younger than {_fmt(older_than)}"
        return "remove"


def _fmt(delta: timedelta) -> str:
    seconds = int(delta.total_seconds())
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}{'' if seconds % size == 0 else '+'}"
    return f"{seconds}s"


def describe_age(container: LeftContainer, now: datetime) -> str:
    age = container.age(now)
    return "?" if age is None else _fmt(age)


def parse_inspect(data: list[dict[str, Any]]) -> list[LeftContainer]:
    """Containers from `docker inspect` JSON (a pure function, tested on captured output)."""
    found: list[LeftContainer] = []
    for item in data:
        config_labels: dict[str, str] = (item.get("Config") or {}).get("Labels") or {}
        if labels.MANAGED not in config_labels:
            continue
        owner = config_labels.get(labels.OWNER, "")
        found.append(
            LeftContainer(
                id=str(item.get("Id", ""))[:12],
                name=str(item.get("Name", "")).lstrip("/"),
                state=str((item.get("State") or {}).get("Status", "?")),
                on_close=config_labels.get(labels.ON_CLOSE, ""),
                created=labels.parse_created(config_labels.get(labels.CREATED)),
                owner=owner,
                owner_alive=labels.owner_alive(owner) if owner else None,
                session=config_labels.get(labels.SESSION, ""),
            )
        )
    return sorted(found, key=lambda c: (c.created or datetime.min.replace(tzinfo=UTC), c.name))


async def list_containers(cli: DockerCLI) -> list[LeftContainer]:
    """Every sandlot-labelled container of the engine, running or not."""
    ids = await cli.check(
        "ps", "-aq", "--no-trunc", "--filter", f"label={labels.MANAGED}",
        what="listing sandlot containers",
    )  # fmt: skip
    if not ids.stdout.split():
        return []
    done = await cli.run("container", "inspect", *ids.stdout.split())
    if done.code != 0 and not done.stdout.strip():
        # One may have vanished between the two calls: that is fine, the rest still counts.
        raise cli.error(done.stderr, what="inspecting sandlot containers", fallback=ProviderError)
    return parse_inspect(json.loads(done.stdout or "[]"))


async def remove(cli: DockerCLI, containers: list[LeftContainer]) -> list[str]:
    """Remove the containers; return the error lines of those that could not be removed."""
    if not containers:
        return []
    done = await cli.run("rm", "-f", "-v", *(c.id for c in containers), timeout=300)
    if done.code == 0:
        for container in containers:  # their forward handover directories (adr/0055)
            handover.remove_dir(handover.dir_of_session(container.session))
        return []
    return [ln for ln in done.stderr.splitlines() if ln.strip()
            and "no such container" not in ln.lower()]


#: The label of an image `sandlot.fork` committed (see sandlot.forks.IMAGE_LABELS).
FORK_IMAGE = "sandlot.fork"


async def fork_images(cli: DockerCLI, *, include_live: bool) -> list[str]:
    """Fork images no container uses any more whose program is gone (or any, with
    `include_live`): a fork removes its image when its last fork closes, unless it crashed."""
    listed = await cli.check("images", "-q", "--no-trunc", "--filter",
                             f"label={FORK_IMAGE}=true", what="listing sandlot fork images")
    found: list[str] = []
    for image in dict.fromkeys(listed.stdout.split()):
        users = await cli.run("ps", "-aq", "--filter", f"ancestor={image}")
        if users.code != 0 or users.stdout.strip():
            continue
        if not include_live:
            owner = await cli.run("image", "inspect", "--format",
                                  f'{{{{index .Config.Labels "{labels.OWNER}"}}}}', image)
            token = owner.stdout.strip() if owner.code == 0 else ""
            if token and labels.owner_alive(token):
                continue
        found.append(image)
    return found


async def remove_images(cli: DockerCLI, images: list[str]) -> list[str]:
    """Remove the images; return the error lines of those that could not be removed."""
    if not images:
        return []
    done = await cli.run("rmi", *images, timeout=300)
    return [] if done.code == 0 else [ln for ln in done.stderr.splitlines() if ln.strip()]
