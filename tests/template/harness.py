"""The template tier: the real `coder server` provisioning providers/coder through Terraform.

    with TemplateCoder(engine) as coder:     # engine: tests/docker_engine.DockerEngine
        sandlot.coder(template=coder.template, preset="ci", on_close="delete", **coder.access())

What differs from a production deployment, and why (adr/0045):
- Terraform runs offline: the provisioner's environment has `TF_CLI_CONFIG_FILE` pointing at a
  CLI config whose `filesystem_mirror` holds the two providers setup built
  (scripts/setup.d/70-terraform.sh), so `terraform init` installs them without a registry.
- The agent binary comes from the server's own /bin route: this build of coder has no embedded
  binaries, and such a server serves `<cache dir>/site/bin` as it is; the harness puts the very
  binary that runs the server there, so the container's init script downloads it from the
  deployment as in production.
- The template is pushed unchanged, with four variables: `docker_host` (the tests' private
  engine), `workspace_image` (the image scripts/build-workspace-image.sh made from Debian's
  packages; image/Dockerfile needs the internet), `network_mode=host` and
  `host_gateway=127.0.0.1` (the private engine has no bridge network).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from tests.docker_engine import DockerEngine
from tests.realcoder.harness import RealCoder, cached_binary

REPO = Path(__file__).resolve().parents[2]
TEMPLATE_DIR = REPO / "providers" / "coder"
IMAGE_SCRIPT = REPO / "scripts" / "build-workspace-image.sh"
TF_CACHE = Path(
    os.environ.get("SANDLOT_TF_CACHE")
    or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "sandlot" / "terraform"
)
#: The versions the mirror serves the two providers as (they satisfy main.tf's constraints):
#: coder/coder is built at its tag; kreuzwerker/docker at a master commit after v4.6.0.
PROVIDERS = {"coder": ("coder", "2.19.0"), "docker": ("kreuzwerker", "4.6.0")}
TEMPLATE = "sandlot"


def terraform_binary() -> Path | None:
    found = shutil.which("terraform") or (
        str(TF_CACHE / "terraform") if (TF_CACHE / "terraform").exists() else None
    )
    return Path(found) if found else None


def missing_parts() -> list[str]:
    """What this host lacks for the tier (empty when everything is there)."""
    missing = []
    if cached_binary() is None:
        missing.append("the real coder binary (scripts/build-coder.sh)")
    if terraform_binary() is None:
        missing.append("terraform (scripts/setup.d/70-terraform.sh)")
    for name in PROVIDERS:
        if not (TF_CACHE / "providers" / f"terraform-provider-{name}").exists():
            missing.append(f"terraform-provider-{name} (scripts/setup.d/70-terraform.sh)")
    return missing


def cached_rootfs() -> Path | None:
    """The root file system tar of the workspace image, if setup built it (the script's
    `--cached` mode prints its path without building)."""
    done = subprocess.run(
        ["bash", str(IMAGE_SCRIPT), "--cached"], capture_output=True, text=True, timeout=60,
        check=False,
    )  # fmt: skip
    return Path(done.stdout.strip()) if done.returncode == 0 else None


def import_image(engine: DockerEngine, rootfs: Path) -> tuple[str, float]:
    """`docker import` the rootfs once per recipe (the engine's data root is cached).

    Returns the tag and the seconds the import took (0 when the image was already there).
    """
    tag = f"sandlot-workspace:debian-{rootfs.parent.name}"
    if engine.docker("image", "inspect", tag, check=False, timeout=60).returncode == 0:
        return tag, 0.0
    began = time.monotonic()
    with rootfs.open("rb") as tar:
        done = subprocess.run(
            ["docker", "--host", engine.host, "import",
             "--change", "ENV LANG=C.UTF-8",
             "--change", "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
             "-", tag],
            stdin=tar, capture_output=True, text=True, timeout=1800, check=False,
        )  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"docker import of {rootfs} failed: {done.stderr.strip()}")
    return tag, round(time.monotonic() - began, 1)


def write_cli_config(root: Path) -> Path:
    """A Terraform CLI config whose filesystem mirror holds the two providers built by setup."""
    mirror = root / "tf-mirror"
    for name, (namespace, version) in PROVIDERS.items():
        where = mirror / "registry.terraform.io" / namespace / name / version / "linux_amd64"
        where.mkdir(parents=True, exist_ok=True)
        source = (TF_CACHE / "providers" / f"terraform-provider-{name}").resolve()
        target = where / f"terraform-provider-{name}_v{version}"
        if not target.exists():
            target.symlink_to(source)
    config = root / "terraformrc"
    config.write_text(
        "provider_installation {\n"
        f'  filesystem_mirror {{\n    path    = "{mirror}"\n'
        '    include = ["registry.terraform.io/*/*"]\n  }\n'
        "}\n"
        # No check for newer terraform or provider releases: nothing outside is reachable.
        "disable_checkpoint = true\n"
    )
    return config


class TemplateCoder(RealCoder):
    """A RealCoder whose one template is providers/coder, provisioned by Terraform."""

    def __init__(self, engine: DockerEngine, image: str, *, binary: Path | None = None) -> None:
        self.engine = engine
        self.image = image
        self.template = TEMPLATE
        self.push_seconds = 0.0
        terraform = terraform_binary()
        if terraform is None:
            raise FileNotFoundError("terraform not found: run scripts/setup.d/70-terraform.sh")
        self._tf_setup = Path(tempfile.mkdtemp(prefix="sandlot-template-tf-"))
        config = write_cli_config(self._tf_setup)
        server_env = {
            # The Terraform provisioner only (the echo templates are the other tier's).
            "CODER_PROVISIONER_TYPES": "terraform",
            "CODER_PROVISIONER_DAEMONS": "2",
            "TF_CLI_CONFIG_FILE": str(config),
            "CHECKPOINT_DISABLE": "1",
            "PATH": f"{terraform.parent}:{os.environ.get('PATH', '/usr/bin:/bin')}",
        }
        super().__init__(binary, templates=(), server_env=server_env, local_agents=False)

    def _start(self) -> None:
        super()._start()
        # Serve the agent binary from /bin: the server reads <cache>/site/bin as it is.
        bin_dir = self.root / "server-cache" / "site" / "bin"
        bin_dir.mkdir(parents=True, exist_ok=True)
        agent = bin_dir / "coder-linux-amd64"
        if not agent.exists():
            shutil.copyfile(self.binary, agent)
            agent.chmod(0o755)
        t = time.monotonic()
        self._push()
        self.push_seconds = self._timed("template_push", t)

    def _push(self) -> None:
        variables = {
            "docker_host": self.engine.host,
            "workspace_image": self.image,
            "network_mode": "host",
            "host_gateway": "127.0.0.1",
        }
        argv = [str(self.binary), "templates", "push", TEMPLATE, "--directory", str(TEMPLATE_DIR),
                "--yes", "--name", "v1"]  # fmt: skip
        for name, value in variables.items():
            argv += ["--variable", f"{name}={value}"]
        done = subprocess.run(
            argv, env=self.cli_env(), capture_output=True, text=True, timeout=600, check=False,
            stdin=subprocess.DEVNULL,
        )  # fmt: skip
        if done.returncode != 0:
            raise RuntimeError(
                f"pushing providers/coder failed ({done.returncode}):\n"
                f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
            )

    def _stop(self) -> None:
        try:
            super()._stop()
        finally:
            shutil.rmtree(self._tf_setup, ignore_errors=True)

    def containers(self) -> list[dict[str, Any]]:
        """Containers the template made on the engine (labelled coder.workspace_id)."""
        out = self.engine.docker(
            "ps", "-a", "--filter", "label=coder.workspace_id", "--format", "{{json .}}"
        ).stdout
        return [json.loads(line) for line in out.splitlines() if line.strip()]

    def volumes(self) -> list[str]:
        out = self.engine.docker(
            "volume", "ls", "--filter", "label=coder.workspace_id", "--format", "{{.Name}}"
        ).stdout
        return [line for line in out.split() if line]
