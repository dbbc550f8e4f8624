"""No import cycle in the package: no module reaches, through its imports (deferred ones
included), a module that imports it. import-linter's contracts (make lint) say which way the
layers point; this says nothing points back."""

from __future__ import annotations

import grimp


def test_no_module_of_the_package_imports_its_way_back_to_itself() -> None:
    graph = grimp.build_graph("holdpoint", "holdpoint_sdk", "holdpoint_local", cache_dir=None)
    back = sorted((module, imported) for module in graph.modules
                  for imported in graph.find_modules_directly_imported_by(module)
                  if imported != module and graph.chain_exists(importer=imported, imported=module))
    assert back == [], back
