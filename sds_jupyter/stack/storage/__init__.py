"""The stack's storage wing: where bytes live and how they are reached, bounded and contained.

Paths and locations (a folder or object storage), the sources a version's files are read from
(folders and zip archives), raw reads for zarr, gzip, partial-write locks and the on-disk
records (the inflation rules of chunks stay on the floor beside the store whose metadata they read). Nothing here knows what a version or a manifest is,
so storage can change kind (e.g. zarr's own stores wrapped once) without touching the floor above.
"""
