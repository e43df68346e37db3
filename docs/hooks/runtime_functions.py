"""Griffe extension: functions that a module makes by calling a factory are documented.

``less = _binary(ew.lt, "less")`` reads, to static analysis, as an attribute without a
docstring; the function it binds has a signature and a docstring at run time. This
extension replaces such an attribute with the function as importing the module shows it.
"""

from __future__ import annotations

import inspect
import sys
from typing import Any

import griffe


class RuntimeFunctions(griffe.Extension):
    def on_module_members(self, *, mod: griffe.Module, **kwargs: Any) -> None:
        runtime = sys.modules.get(mod.path)
        if runtime is None:
            return
        made = [
            name
            for name, member in mod.members.items()
            if not member.is_alias
            and member.is_attribute
            and inspect.isfunction(getattr(runtime, name, None))
            and getattr(runtime, name).__module__ == mod.path
        ]
        if made:
            inspected = griffe.inspect(mod.path)
            for name in made:
                function = inspected.members[name]
                function.lineno, function.endlineno = mod.members[name].lineno, mod.members[name].endlineno
                mod.set_member(name, function)
