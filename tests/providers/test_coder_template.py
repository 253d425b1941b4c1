"""providers/coder/ is a valid Coder template: `terraform fmt` and `terraform validate`, for real.

terraform checks every resource, data source, attribute and block against the schemas of the
two providers (built from the Go module proxy by scripts/setup.d/70-terraform.sh and reached
through `dev_overrides`, since the Terraform registry is not reachable here). It neither builds
the image nor provisions a workspace; providers/coder/README.md says so too.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import require

REPO_ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = REPO_ROOT / "providers" / "coder"
CACHE = Path(
    os.environ.get("SANDLOT_TF_CACHE")
    or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "sandlot" / "terraform"
)
HINT = "run scripts/setup.d/70-terraform.sh (builds terraform's coder and docker providers)"


def _terraform() -> str:
    found = shutil.which("terraform") or (
        str(CACHE / "terraform") if (CACHE / "terraform").exists() else None
    )
    require(found is not None, f"terraform not found; {HINT}")
    assert found is not None
    return found


def _providers() -> Path:
    providers = CACHE / "providers"
    for name in ("coder", "docker"):
        require((providers / f"terraform-provider-{name}").exists(),
                f"terraform-provider-{name} not built in {providers}; {HINT}")  # fmt: skip
    return providers


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    """A copy of the template (terraform writes state files beside it) and a CLI config."""
    copy = tmp_path / "template"
    shutil.copytree(TEMPLATE, copy)
    return copy


def _env(tmp_path: Path) -> dict[str, str]:
    config = tmp_path / "terraformrc"
    providers = _providers()
    config.write_text(
        "provider_installation {\n"
        "  dev_overrides {\n"
        f'    "coder/coder" = "{providers}"\n'
        f'    "kreuzwerker/docker" = "{providers}"\n'
        "  }\n"
        "  direct {}\n"
        "}\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("TF_")}
    env.update(TF_CLI_CONFIG_FILE=str(config), TF_IN_AUTOMATION="1",
               CHECKPOINT_DISABLE="1", TF_DATA_DIR=str(tmp_path / "tfdata"))  # fmt: skip
    return env


def _validate(terraform: str, where: Path, env: dict[str, str]) -> dict[str, Any]:
    done = subprocess.run(
        [terraform, "validate", "-json", "-no-color"], cwd=where, env=env,
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    try:
        result: dict[str, Any] = json.loads(done.stdout)
    except json.JSONDecodeError:
        raise AssertionError(
            f"terraform validate printed no JSON:\n{done.stdout}\n{done.stderr}"
        ) from None
    return result


def test_template_is_formatted() -> None:
    terraform = _terraform()
    done = subprocess.run(
        [terraform, "fmt", "-check", "-diff", "-recursive", str(TEMPLATE)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr


def test_template_validates_against_both_providers(workdir: Path, tmp_path: Path) -> None:
    terraform = _terraform()
    result = _validate(terraform, workdir, _env(tmp_path))
    errors = [d for d in result["diagnostics"] if d["severity"] == "error"]
    assert result["valid"] is True and not errors, json.dumps(errors, indent=2)
    # The only warnings expected: the development overrides, and `dir`'s deprecation.
    for warning in (d for d in result["diagnostics"] if d["severity"] == "warning"):
        text = warning["summary"] + warning.get("detail", "")
        assert "override" in text.lower() or "dir" in text, warning


@pytest.mark.parametrize(
    "old, new, complaint",
    [
        ("start_blocks_login = true", "start_blocks_logins = true", "start_blocks_logins"),
        ('  dir = local.project_dir', '  directory = local.project_dir', "directory"),
        ("  cpus       = data.coder_parameter.cpu_cores.value",
         "  cpus       = [data.coder_parameter.cpu_cores.value]", "cpus"),
    ],
)  # fmt: skip
def test_validation_catches_a_wrong_attribute(
    workdir: Path, tmp_path: Path, old: str, new: str, complaint: str
) -> None:
    """The check is real: a misspelt or mistyped attribute makes validate fail, naming it."""
    main = workdir / "main.tf"
    text = main.read_text()
    assert old in text
    main.write_text(text.replace(old, new, 1))
    result = _validate(_terraform(), workdir, _env(tmp_path))
    errors = [d for d in result["diagnostics"] if d["severity"] == "error"]
    assert result["valid"] is False and errors
    assert any(complaint in json.dumps(e) for e in errors), json.dumps(errors, indent=2)


def _plan(workdir: Path, tmp_path: Path, docker_host: str, **env: str) -> dict[str, Any]:
    terraform = _terraform()
    run_env = {**_env(tmp_path), **env}
    plan = tmp_path / "plan.bin"
    done = subprocess.run(
        [terraform, "plan", "-no-color", "-input=false", f"-var=docker_host={docker_host}",
         f"-out={plan}"], cwd=workdir, env=run_env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    shown = subprocess.run(
        [terraform, "show", "-json", str(plan)], cwd=workdir, env=run_env,
        capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    changes = json.loads(shown.stdout)["resource_changes"]
    return {
        c["address"]: c["change"]["after"] for c in changes if "create" in c["change"]["actions"]
    }


def test_template_plans_a_workspace_on_a_real_engine(workdir: Path, tmp_path: Path) -> None:
    """`terraform plan` against the tests' private Docker engine evaluates every expression.

    (Apply would build image/Dockerfile, which downloads toolchains: not possible here.)
    """
    docker_backend = pytest.importorskip("tests.backends.docker")
    host = docker_backend.engine().host
    planned = _plan(workdir, tmp_path, host)
    assert set(planned) == {
        "coder_agent.main", "coder_script.prepare", "docker_image.workspace[0]",
        "docker_volume.home", "docker_container.workspace[0]", "coder_metadata.workspace[0]",
    }  # fmt: skip
    agent = planned["coder_agent.main"]
    assert agent["dir"] == "/home/coder/project" and agent["os"] == "linux"
    script = planned["coder_script.prepare"]
    assert script["start_blocks_login"] is True and script["run_on_start"] is True
    container = planned["docker_container.workspace[0]"]
    # The defaults of the parameters (2 CPUs, 4 GiB), the user, the init, the home volume.
    assert container["cpus"] == "2" and container["memory"] == 4096
    assert container["user"] == "coder" and container["init"] is True
    assert [v["container_path"] for v in container["volumes"]] == ["/home/coder"]
    # The production defaults of the test-host variables: a bridge, the Docker host's gateway.
    assert container.get("network_mode") in (None, "bridge")
    assert container["host"] == [{"host": "host.docker.internal", "ip": "host-gateway"}]
    image = planned["docker_image.workspace[0]"]
    assert image["build"][0]["build_args"]["GO_VERSION"]
    # A stopped workspace keeps its volume and image, but has no container.
    stopped = _plan(workdir, tmp_path, host, CODER_WORKSPACE_TRANSITION="stop")
    assert "docker_container.workspace[0]" not in stopped and "docker_volume.home" in stopped
