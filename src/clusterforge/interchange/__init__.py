"""The inventory to and from other systems of record: NetBox export and import."""
