"""The service's requests, one room per feature, each a set of functions of a :class:`~sds_jupyter.service.session.Session`.

A feature with logic of its own is a package whose ``__init__`` is the transport-facing entry the
request table calls, with that logic beside it (``annotate/regions.py``; ``history/contents.py``
and ``opdetails.py``; ``cells/genes.py`` and ``colorcache.py``); a feature that is one module stays
one module.

``history`` (history, changes, contents), ``figures`` (the figure list, export drawings),
``cells`` (a canvas figure's cells and their colours, genes), ``images`` (image channels,
regions and tiles, raw store keys), ``results`` (result lists, pages and CSV), ``compare``
and ``annotate`` (the one request that saves). The request table
(:data:`sds_jupyter.service.requests.REQUESTS`) names them; they never import each other
(an import-linter contract), only the shared modules below them: the session, the tree of
branches (:mod:`sds_jupyter.service.branches`) and the readers.
"""
