"""Record `docker inspect` output of real sandlot containers for the gc parser's tests.

    python -m tests.docker.capture_fixtures      (starts and stops a private engine)
"""

from __future__ import annotations

import json
from pathlib import Path

import anyio

import sandlot
from tests import docker_engine

OUT = Path(__file__).parent.parent / "fixtures" / "docker" / "inspect-sandlot.json"


async def capture(engine: docker_engine.DockerEngine) -> None:
    image = engine.busybox_image()
    made = []
    for name, policy in (("sandlot-capture-delete", "delete"), ("sandlot-capture-stop", "stop")):
        made.append(await sandlot.docker(image, on_close=policy, name=name,  # type: ignore[arg-type]
                                         docker_host=engine.host).create())
    await made[1].close()  # stopped: shows the exited state
    other = engine.docker("run", "-d", "--network", "none", "--name", "not-sandlot", image,
                          "sleep", "60").stdout.strip()
    ids = [s.container_id for s in made] + [other]
    data = json.loads(engine.docker("container", "inspect", *ids).stdout)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(data, indent=1) + "\n")
    engine.docker("rm", "-f", *ids)


def main() -> None:
    with docker_engine.running() as engine:
        anyio.run(capture, engine)
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
