"""odradek's web console (``odradek console``): pages over the admin client and the simple
consumer, served by Starlette and rendered with Jinja2 (the ``console`` extra).

Parts, one owner each: ``lag`` (a group's lag in offsets and in seconds; no web code, the demo
uses it too), ``render`` (bytes and figures as text a person reads), ``views`` (the pages'
values, built from admin answers; pure), ``inputs`` (form and query values checked, one clear
message each), ``service`` (the broker calls behind every page), ``app`` (routes, templates,
error pages), ``server`` (uvicorn on a bound socket, in the foreground or a thread).

This package's ``__init__`` imports nothing, so ``odradek.console.lag`` loads without the web
stack.
"""
