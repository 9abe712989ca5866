"""The client side of an OpenAI-compatible call, which both directions of the adapters make.

Reading a reply (:mod:`.reply`), a stream of chunks (:mod:`.streaming`), retries and the errors they
map to (:mod:`.attempts`): :class:`~stepguard.adapters.OpenAICompatibleModel` (a model) and
:class:`~stepguard.adapters.GuardedOpenAI` (an integration) read an endpoint's answers alike. The
wire format of a guarded run, which the drop-in client shares with the proxy, lives in
:mod:`stepguard.wire`. This package imports neither ``models`` nor ``integrations``.
"""
