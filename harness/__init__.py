"""kafka-replay: replay real Kafka incidents against your application and prove what happened."""
