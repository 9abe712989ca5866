"""The integrations that call the core: stepguard inside another system.

:mod:`.openai_wrapper` (:class:`~stepguard.adapters.GuardedOpenAI`, the drop-in ``openai`` client),
:mod:`.langgraph_node` (:func:`~stepguard.adapters.guarded_node`), :mod:`.inspect` (Inspect AI's
tasks, solvers and scorer; its ``inspect_ai`` entry point) and :mod:`.lm_eval` (an lm-eval task
folder; ``python -m stepguard.adapters.lm_eval``).

This package imports the core's public API, :mod:`stepguard.wire` and the OpenAI client plumbing in
``stepguard.adapters._openai``, never :mod:`stepguard.adapters.models`: a model reaches an
integration from its caller (an import-linter contract in pyproject.toml).
"""
