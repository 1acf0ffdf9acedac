"""The Cloud Control API emulator's parts; scripts/cloudcontrol_emulator.py puts them together.

    schema.py   resource-type metadata (identifiers, read-only / write-only / create-only)
    patch.py    RFC 6902 JSON Patch and RFC 6901 pointers
    faults.py   fault injection (throttling, failed requests, slow requests)
    store.py    resource records, resource requests, the generic in-memory store
    moto_backed.py  the types created through moto's CloudFormation models

See README.md for the HTTP interface.
"""
