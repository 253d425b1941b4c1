"""A symbol the model names as `Type.method` is found however the server spells its
container: gopls's receivers, rust-analyzer's impl blocks (document symbols) or bare types
(workspace symbols)."""

from __future__ import annotations

import pytest

from sandlot.lsp.models import Location, Span, Symbol
from sandlot.lsp.navigator import _names


def _symbol(name: str, container: str | None) -> Symbol:
    where = Location(path="src/store.rs", in_workspace=True, span=Span(line=1, column=1,
                     end_line=1, end_column=2))
    return Symbol(name=name, kind="method", location=where, container=container)


@pytest.mark.parametrize("container", [
    "Store", "impl Store", "impl<T> Store<T>", "impl Display for Store",
    "impl<K: Ord, V> fmt::Debug for Store<K, V>",
])
def test_a_method_is_found_by_its_type_in_any_container_spelling(container: str) -> None:
    assert _names(_symbol("get", container), "Store.get")
    assert not _names(_symbol("get", container), "Cache.get")


def test_a_go_receiver_and_a_package_path_still_match() -> None:
    assert _names(_symbol("(*Store).Get", None), "Store.Get")
    assert _names(_symbol("Get", "shop.Store"), "Store.Get")
    assert not _names(_symbol("Get", "Cache"), "Store.Get")
