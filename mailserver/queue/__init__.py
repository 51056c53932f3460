"""Mail queues: the port, the distributed RabbitMQ + Cassandra + S3 adapter, a memory adapter."""
