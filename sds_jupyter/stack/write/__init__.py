"""The stack's write wing: turning edits into a new version (plan, encode, copy-on-write, commit).

It sits above the floor (it opens what it saves over) and above storage; nothing below imports it.
"""
