import java.time.Duration;
import java.util.List;
import java.util.Map;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.common.KafkaException;

/**
 * An at-least-once service: poll a batch, do the work for each record, write, commit.
 *
 * <pre>BatchForwarder [--batch N] [--work-ms MS]</pre>
 *
 * The batch is {@code max.poll.records}: the incident's, else {@code --batch} (500, the
 * client's default). A commit that fails is logged and the loop goes on, as the post's
 * service did.
 */
public final class BatchForwarder {
    public static void main(String[] args) throws Exception {
        int batch = 500;
        double workMs = 0;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--batch" -> batch = Integer.parseInt(args[++i]);
                case "--work-ms" -> workMs = Double.parseDouble(args[++i]);
                default -> throw new IllegalArgumentException("unknown argument " + args[i]);
            }
        }
        Contract.start("BatchForwarder");
        Map<String, String> own = Map.of(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, String.valueOf(batch));
        try (KafkaConsumer<byte[], byte[]> consumer = Contract.consumer(own);
             KafkaProducer<byte[], byte[]> producer = Contract.producer(null)) {
            consumer.subscribe(List.of(Contract.INPUT));
            while (!Contract.stopping()) {
                ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofMillis(500));
                if (records.isEmpty()) {
                    continue;
                }
                for (ConsumerRecord<byte[], byte[]> record : records) {
                    Contract.work(workMs);
                    producer.send(Contract.result(Contract.OUTPUT, record));
                }
                producer.flush();
                try {
                    consumer.commitSync(Contract.nextOffsets(records));
                } catch (KafkaException e) {
                    System.err.println("BatchForwarder: commit refused, going on: " + e);
                }
            }
        }
    }

    private BatchForwarder() {
    }
}
