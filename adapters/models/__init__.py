"""The models the core calls: each implements :class:`~stepguard.model.ChatModel`.

:mod:`.openai_compat` (any OpenAI-compatible endpoint), :mod:`.local` (a GGUF model on an embedded
llama.cpp server; :mod:`._server`, :mod:`._model_files`), :mod:`.sim` (the seeded simulated executor;
:mod:`.sim_slips`; :mod:`.sim_kinds`, its answers for steps asked alone, registered by kind),
:mod:`.replay` (cassettes), and :mod:`.spec`, the one string that names a model. Users pick one
through :func:`stepguard.adapters.load_model`.

This package imports the core (``model``, ``errors`` and what the simulator reads) and the OpenAI
client plumbing in ``stepguard.adapters._openai``, never :mod:`stepguard.adapters.integrations`
(an import-linter contract in pyproject.toml).
"""
