"""The import direction of adr/0039: engine <- sandbox <- backends <- everything above.

Read from the source (the AST), not by importing, so a cycle hidden in a function body or
behind TYPE_CHECKING is seen too:

* `sandlot._engine`, and everything it imports in turn, imports nothing of `sandbox`, the
  backends, or the modules built on them;
* `transfer`, `forward`, the toolbox runner and `processes` touch no private member of
  their sandbox (`sandbox._x`, `self.sandbox._x`) and import no private name of `sandbox`
  (they reach the engine through `_engine.engine_of`);
* none of these modules imports inside a function (the old way of hiding the cycle).
"""

from __future__ import annotations

import ast
from pathlib import Path

import sandlot

SRC = Path(sandlot.__file__).parent

#: What the engine may never reach, directly or through what it imports.
ABOVE_ENGINE = ("sandlot.sandbox", "sandlot.backends", "sandlot.transfer", "sandlot.forward",
                "sandlot.tools", "sandlot.processes", "sandlot.provider", "sandlot.sync")

#: The engine's users that must not reach into `Sandbox`.
USERS = ["transfer.py", "forward.py", "tools/runner.py", *sorted(
    str(p.relative_to(SRC)) for p in (SRC / "processes").glob("*.py"))]

#: Modules where a function-level import would hide a cycle.
NO_LOCAL_IMPORTS = ["_engine.py", "sandbox.py", *USERS]


def module_name(rel: str) -> str:
    parts = rel.removesuffix(".py").split("/")
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(["sandlot", *parts])


def path_of(module: str) -> Path | None:
    if module == "sandlot":
        return None  # the package's own __init__ imports everything: not a dependency
    rel = Path(*module.split(".")[1:])
    for candidate in (SRC / rel.with_suffix(".py"), SRC / rel / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def imported(path: Path) -> set[str]:
    """Every sandlot module `path` imports, anywhere in it (TYPE_CHECKING blocks included)."""
    rel = str(path.relative_to(SRC))
    package = module_name(rel).split(".")
    if not rel.endswith("__init__.py"):
        package.pop()
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("sandlot")}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = ".".join(package[: len(package) - node.level + 1])
                target = f"{base}.{node.module}" if node.module else base
            else:
                target = node.module or ""
            if not target.startswith("sandlot"):
                continue
            if node.module:  # `from . import x` imports x, not the package's __init__ too
                found.add(target)
            # `from .m import x` names a module when x is one.
            found |= {f"{target}.{a.name}" for a in node.names
                      if path_of(f"{target}.{a.name}") is not None}
    return found


def closure(start: str) -> set[str]:
    seen: set[str] = set()
    todo = [start]
    while todo:
        module = todo.pop()
        if module in seen:
            continue
        seen.add(module)
        path = path_of(module)
        if path is not None:
            todo.extend(imported(path))
    return seen


def sandbox_private_names() -> set[str]:
    """Private members of `Sandbox`: defined in its class body or assigned on `self`."""
    tree = ast.parse((SRC / "sandbox.py").read_text())
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Sandbox")
    names: set[str] = set()
    for node in ast.walk(cls):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            names.add(node.name)
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
                and node.value.id == "self" and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
        elif isinstance(node, ast.AnnAssign | ast.Assign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {t.id for t in targets if isinstance(t, ast.Name)}
    return {n for n in names if n.startswith("_") and not n.startswith("__")}


def holds_sandbox(node: ast.expr) -> bool:
    return ((isinstance(node, ast.Name) and node.id == "sandbox")
            or (isinstance(node, ast.Attribute) and node.attr == "sandbox"))


def test_the_engine_imports_nothing_above_it() -> None:
    reached = closure("sandlot._engine")
    assert "sandlot.errors" in reached  # the walk does follow imports
    above = sorted(m for m in reached if m.startswith(ABOVE_ENGINE))
    assert not above, f"sandlot._engine reaches {above}"


def test_the_engines_users_touch_no_private_member_of_sandbox() -> None:
    private = sandbox_private_names()
    assert {"_spawn", "_engine", "_ensure_open", "_copy_in"} <= private  # the list is real
    for rel in USERS:
        tree = ast.parse((SRC / rel).read_text())
        # `sandbox._x` or `<anything>.sandbox._x`: how these modules hold their sandbox.
        used = {node.attr for node in ast.walk(tree)
                if isinstance(node, ast.Attribute) and holds_sandbox(node.value)}
        from_sandbox = {a.name for node in ast.walk(tree)
                        if isinstance(node, ast.ImportFrom) and (node.module or "").endswith(
                            "sandbox") for a in node.names}
        assert not used & private, f"{rel} uses Sandbox's {sorted(used & private)}"
        bad = {n for n in from_sandbox if n.startswith("_")}
        assert not bad, f"{rel} imports {sorted(bad)} from sandbox"


def test_no_function_level_import_hides_a_cycle() -> None:
    for rel in NO_LOCAL_IMPORTS:
        tree = ast.parse((SRC / rel).read_text())
        for func in ast.walk(tree):
            if not isinstance(func, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            local = [n for n in ast.walk(func) if isinstance(n, ast.Import | ast.ImportFrom)]
            assert not local, f"{rel}: {func.name} imports inside the function (line " \
                              f"{local[0].lineno})"
