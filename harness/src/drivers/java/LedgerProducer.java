// The durability matrix's Java producer: Kafka's own KafkaProducer, driven as fast as it accepts records for a
// bounded time, writing a ledger of every record it sent and what became of it. Compiled by the lab
// (xtask/src/clients/ledger_producer.rs) with the JDK's javac against the pinned kafka-clients jar; run by the
// harness (harness/src/drivers/java/ledger.rs), which reads the ledger back and checks it against the topic.
//
// Every value is an 8-byte big-endian sequence number followed by 'x' up to the payload size, keyless.
// Ledger lines (times in epoch microseconds, from one anchor of currentTimeMillis and nanoTime):
//   <seq> <partition> <offset> <sent_us> <ack_us>          acknowledged
//   <seq> E <sent_us> <ack_us> <exception class>           failed (the callback's exception)
//   <seq> U <sent_us>                                      sent, never answered before close
// The first record is sent alone: the run's <run ms> start at its acknowledgement (when the client can send), which
// may take at most <first ack ms>; the epoch ms of that acknowledgement goes to <started file>. A first record not
// acknowledged in time, or failed, ends the program with exit code 3 and a line "first record: <why>", no ledger.
// Arguments: <producer.properties> <topic> <payload bytes> <run ms> <max records> <ledger file> <started file>
//            <flush timeout ms> <first ack ms>

import java.io.BufferedWriter;
import java.io.FileInputStream;
import java.io.FileWriter;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.Arrays;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public final class LedgerProducer {
    private static final long ANCHOR_MS = System.currentTimeMillis();
    private static final long ANCHOR_NS = System.nanoTime();

    static long nowUs() {
        return ANCHOR_MS * 1000L + (System.nanoTime() - ANCHOR_NS) / 1000L;
    }

    /** Exit code of a first record not acknowledged within its wait (see the header). */
    static final int FIRST_ACK_FAILED = 3;

    public static void main(String[] args) throws Exception {
        if (args.length != 9) {
            System.err.println("usage: LedgerProducer <producer.properties> <topic> <payload bytes> <run ms> "
                + "<max records> <ledger file> <started file> <flush timeout ms> <first ack ms>");
            System.exit(2);
        }
        Properties props = new Properties();
        try (InputStream in = new FileInputStream(args[0])) {
            props.load(in);
        }
        String topic = args[1];
        int payloadBytes = Math.max(8, Integer.parseInt(args[2]));
        long runMs = Long.parseLong(args[3]);
        int maxRecords = Integer.parseInt(args[4]);
        String ledgerFile = args[5];
        String startedFile = args[6];
        long flushTimeoutMs = Long.parseLong(args[7]);
        long firstAckMs = Long.parseLong(args[8]);

        long[] sentUs = new long[maxRecords];
        long[] ackUs = new long[maxRecords];
        int[] partition = new int[maxRecords];
        long[] offset = new long[maxRecords];
        String[] error = new String[maxRecords];
        Arrays.fill(partition, Integer.MIN_VALUE);
        AtomicLong answered = new AtomicLong();

        byte[] fill = new byte[payloadBytes];
        Arrays.fill(fill, (byte) 'x');
        int sent = 0;
        KafkaProducer<byte[], byte[]> producer =
            new KafkaProducer<>(props, new ByteArraySerializer(), new ByteArraySerializer());
        try {
            String notStarted = null;
            CountDownLatch firstAnswered = new CountDownLatch(1);
            long endUs = 0;
            while (sent < maxRecords && (sent == 0 || nowUs() < endUs)) {
                byte[] value = fill.clone();
                ByteBuffer.wrap(value).putLong(sent);
                final int seq = sent;
                sentUs[seq] = nowUs();
                producer.send(new ProducerRecord<>(topic, null, value), (metadata, exception) -> {
                    ackUs[seq] = nowUs();
                    if (exception != null) {
                        error[seq] = exception.getClass().getSimpleName();
                    } else {
                        partition[seq] = metadata.partition();
                        offset[seq] = metadata.offset();
                    }
                    answered.incrementAndGet();
                    if (seq == 0) {
                        firstAnswered.countDown();
                    }
                });
                sent++;
                if (seq == 0) {
                    if (!firstAnswered.await(firstAckMs, TimeUnit.MILLISECONDS)) {
                        notStarted = "not acknowledged within " + firstAckMs + " ms of its send";
                        break;
                    }
                    if (error[0] != null) {
                        notStarted = "failed: " + error[0];
                        break;
                    }
                    endUs = ackUs[0] + runMs * 1000L;
                    writeAtomically(startedFile, Long.toString(ackUs[0] / 1000L));
                }
            }
            if (notStarted != null) {
                System.err.println("first record: " + notStarted);
                producer.close(Duration.ZERO);
                System.exit(FIRST_ACK_FAILED);
            }
            // Bounded: flush() has no timeout of its own; a thread waits for it at most flushTimeoutMs.
            CountDownLatch flushed = new CountDownLatch(1);
            Thread flusher = new Thread(() -> {
                producer.flush();
                flushed.countDown();
            });
            flusher.setDaemon(true);
            flusher.start();
            if (!flushed.await(flushTimeoutMs, TimeUnit.MILLISECONDS)) {
                System.err.println("flush did not finish within " + flushTimeoutMs + " ms; "
                    + answered.get() + " of " + sent + " records answered");
            }
        } finally {
            producer.close(Duration.ofSeconds(10));
        }
        try (BufferedWriter w = new BufferedWriter(new FileWriter(ledgerFile + ".tmp"), 1 << 20)) {
            for (int seq = 0; seq < sent; seq++) {
                if (ackUs[seq] == 0) {
                    w.write(seq + " U " + sentUs[seq] + "\n");
                } else if (error[seq] != null) {
                    w.write(seq + " E " + sentUs[seq] + " " + ackUs[seq] + " " + error[seq] + "\n");
                } else {
                    w.write(seq + " " + partition[seq] + " " + offset[seq] + " " + sentUs[seq] + " " + ackUs[seq] + "\n");
                }
            }
        }
        Files.move(Paths.get(ledgerFile + ".tmp"), Paths.get(ledgerFile), StandardCopyOption.ATOMIC_MOVE);
        System.out.println("sent " + sent + " answered " + answered.get());
    }

    private static void writeAtomically(String path, String text) throws IOException {
        Files.write(Paths.get(path + ".tmp"), text.getBytes("UTF-8"));
        Files.move(Paths.get(path + ".tmp"), Paths.get(path), StandardCopyOption.ATOMIC_MOVE);
    }
}
