"""The client commands: ``headrace topics``, ``configs``, ``records``, ``produce``,
``consume``, ``groups``, ``users`` and ``acls``.

They are Kafka clients of any Kafka-protocol cluster (aiokafka, and small kio clients
for what aiokafka does not ask), so they import nothing of the built-in broker: what
both sides use (ACL bindings, the SCRAM credentials file, kio helpers) lives in
``headrace.base``. ``_commands.register`` adds them to the ``headrace`` command;
``_common`` holds what every command does alike (connection options, errors, output).

- ``_topics``, ``_configs``, ``_records``, ``_log_dirs``: topics and their settings;
- ``_produce``, ``_consume``, ``_formats``, ``_dump``: records in and out;
- ``groups``: consumer and share groups (``GroupAdminClient``, kio over the wire);
- ``security``: SCRAM users and ACLs (``SecurityAdminClient``).
"""
