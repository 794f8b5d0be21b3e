"""Runs one Python block file (prelude + block) the way the asyncio REPL (`python -m asyncio`)
runs what a reader types: top-level `await` / `async with` / `async for` run in an event loop,
anything else as a plain module. Usage: pyrun.py FILE"""
import ast
import asyncio
import sys
import types

path = sys.argv[1]
source = open(path, encoding="utf-8").read()
code = compile(source, path, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
module = types.ModuleType("__main__")
module.__file__ = path
sys.modules["__main__"] = module
result = eval(code, module.__dict__)  # noqa: S307 - the docs' own block
if asyncio.iscoroutine(result):
    asyncio.run(result)
