"""Templates for coder's `echo` provisioner, encoded with coder's own .proto.

The echo provisioner (provisioner/echo/serve.go in coder's source) does not run
Terraform: it replays `provisioner.Response` messages stored as files in the
template archive. For each step it reads `<i>.<transition>.<step>.protobuf`, or
else `<i>.<step>.protobuf`, for i = 0, 1, ... until a file is missing; `Log`
messages become build log lines, and the first `*Complete` message ends the step.
Steps: `parse` (transition "unspecified"), `plan` and `apply` (transitions
"start", "stop", "destroy": the proto enum's names, lower-cased; the API calls
the last one "delete"); from v2.30 also `init` (no transition) and `graph`
(per transition), which then carries the resources, parameters and presets.

We write per-transition files so a workspace looks like a Terraform one: the
start transition has a compute resource carrying the agents, stop keeps only a
volume-like resource, delete has nothing.

Agent tokens are left empty on purpose: coderd then gives every agent of every
build a fresh random token (provisionerdserver.InsertWorkspaceResource), so
many workspaces of one template each get their own agent identity. The harness
reads the token from the database by agent id to start the real agent. A fixed
token can still be set (`token=`), e.g. for a template only one workspace uses.

The .proto is the one shipped with the exact coder release we run (copied next
to the cached binary by scripts/build-coder.sh); it is compiled at run time with
grpcio-tools, so no generated code of coder's lives in this repository.
"""

from __future__ import annotations

import importlib.util
import io
import json
import subprocess
import sys
import tarfile
import uuid
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

PROTO_REL = Path("provisionersdk/proto/provisioner.proto")


def compile_proto(proto_root: Path, out_dir: Path) -> ModuleType:
    """Compile coder's provisioner.proto and import the generated module."""
    # A dev dependency, imported here so a missing one names itself; it ships no type hints.
    import grpc_tools  # type: ignore[import-untyped]

    includes = Path(grpc_tools.__file__).parent / "_proto"
    out_dir.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "grpc_tools.protoc",
            f"-I{proto_root}",
            f"-I{includes}",
            f"--python_out={out_dir}",
            str(PROTO_REL),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"protoc failed on {proto_root / PROTO_REL}: {proc.stderr}")
    generated = out_dir / PROTO_REL.with_name("provisioner_pb2.py")
    name = "sandlot_realcoder_provisioner_pb2"
    if name in sys.modules:  # descriptors can be registered only once per process
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, generated)
    if spec is None or spec.loader is None:
        raise RuntimeError(f"cannot import {generated}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@dataclass(frozen=True)
class EchoParameter:
    """A string `coder_parameter` with a default (mutable, like the fake's)."""

    name: str
    default: str


@dataclass(frozen=True)
class EchoTemplate:
    """What one template declares: agents (by name), their directory, parameters.

    `versions`: names of template versions to push, in order (the last is active);
    empty means one version with a generated name.
    """

    name: str
    agents: tuple[str, ...] = ("main",)
    directory: str = "~/project"  # the agent expands `~` with its $HOME; "" for none
    resource_type: str = "null_resource"
    token: str | None = None  # None: coderd picks a fresh token per agent per build
    parameters: tuple[EchoParameter, ...] = ()
    presets: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = ()  # (name, ((param, value),))
    versions: tuple[str, ...] = ()  # empty: one version named "v1"

    def __post_init__(self) -> None:
        if not self.agents:
            raise ValueError("a template needs at least one agent")
        if self.token is not None and len(self.agents) != 1:
            raise ValueError("a fixed token only makes sense for one agent")


def _agent(pb: Any, spec: EchoTemplate, name: str) -> Any:
    agent = pb.Agent(
        id=str(uuid.uuid4()),
        name=name,
        operating_system="linux",
        architecture="amd64",
        directory=spec.directory,
        connection_timeout_seconds=120,
    )
    if spec.token is not None:
        agent.token = spec.token
    return agent


def write_template(pb: Any, spec: EchoTemplate, dest: Path) -> Path:
    """Write the response files of `spec` into `dest` (a template directory)."""
    dest.mkdir(parents=True, exist_ok=True)

    def put(filename: str, response: Any) -> None:
        (dest / filename).write_bytes(response.SerializeToString())

    def log(text: str) -> Any:
        return pb.Response(log=pb.Log(level=pb.INFO, output=text))

    compute = pb.Resource(
        name="dev",
        type=spec.resource_type,
        agents=[_agent(pb, spec, a) for a in spec.agents],
    )
    volume = pb.Resource(name="home", type="null_resource")
    resources = {"start": [compute, volume], "stop": [volume], "destroy": []}

    parameters = [
        pb.RichParameter(name=p.name, type="string", default_value=p.default, mutable=True, order=i)
        for i, p in enumerate(spec.parameters)
    ]
    presets = [
        pb.Preset(
            name=name,
            parameters=[pb.PresetParameter(name=k, value=v) for k, v in values],
        )
        for name, values in spec.presets
    ]
    put("0.parse.protobuf", pb.Response(parse=pb.ParseComplete()))
    # Releases from v2.30 split a build into init, plan, apply and graph: resources, parameters
    # and presets moved from plan/apply to graph (the .proto of the release says which).
    staged = hasattr(pb, "GraphComplete")
    if staged:
        put("0.init.protobuf", pb.Response(init=pb.InitComplete()))
    for transition, res in resources.items():
        put(f"0.{transition}.plan.protobuf", log(f"echo: planning {transition}"))
        put(f"0.{transition}.apply.protobuf", log(f"echo: applying {transition}"))
        if staged:
            put(f"1.{transition}.plan.protobuf", pb.Response(plan=pb.PlanComplete(plan=b"{}")))
            put(f"1.{transition}.apply.protobuf", pb.Response(apply=pb.ApplyComplete()))
            graph = pb.GraphComplete(resources=res, parameters=parameters)
            if transition == "start":
                graph.presets.extend(presets)
            put(f"0.{transition}.graph.protobuf", pb.Response(graph=graph))
            continue
        plan = pb.PlanComplete(resources=res, plan=b"{}", parameters=parameters)
        if transition == "start":
            plan.presets.extend(presets)
        put(f"1.{transition}.plan.protobuf", pb.Response(plan=plan))
        put(
            f"1.{transition}.apply.protobuf",
            pb.Response(apply=pb.ApplyComplete(resources=res, parameters=parameters)),
        )
    if spec.parameters or spec.presets:
        # Coder evaluates parameters and presets from the template's Terraform
        # files too (dynamic parameters), even with the echo provisioner.
        (dest / "main.tf").write_text(_terraform(spec))
    return dest


def _hcl(value: str) -> str:
    return json.dumps(value)  # a JSON string is a valid HCL string literal


def _terraform(spec: EchoTemplate) -> str:
    lines = [
        "terraform {",
        '  required_providers {\n    coder = {\n      source = "coder/coder"\n    }\n  }',
        "}",
    ]
    for i, p in enumerate(spec.parameters):
        lines += [
            f'data "coder_parameter" "{p.name}" {{',
            f"  name    = {_hcl(p.name)}",
            '  type    = "string"',
            "  mutable = true",
            f"  default = {_hcl(p.default)}",
            f"  order   = {i}",
            "}",
        ]
    for name, values in spec.presets:
        body = ", ".join(f"{_hcl(k)} = {_hcl(v)}" for k, v in values)
        lines += [
            f'data "coder_workspace_preset" "{name}" {{',
            f"  name       = {_hcl(name)}",
            f"  parameters = {{ {body} }}",
            "}",
        ]
    return "\n".join(lines) + "\n"


def tar_directory(directory: Path) -> bytes:
    """The files of `directory` (flat) as an uncompressed tar, as the CLI uploads."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for path in sorted(directory.iterdir()):
            info = tarfile.TarInfo(path.name)
            data = path.read_bytes()
            info.size = len(data)
            info.mode = 0o644
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()
