import java.io.IOException;
import java.io.Reader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.config.ConfigResource;

/**
 * Whether every listener of a lab-started cluster serves clients, in one JVM (one per listener cost a JVM start
 * each at every environment's start). Each argument is `name=properties-file`: an Admin client made from that
 * file (bootstrap.servers and the listener's security settings) reads the brokers from the cluster's metadata,
 * then asks each broker, on that listener, for its configuration, so every broker has answered an authenticated
 * request there. Prints one line per listener, `name ok 1,2,3` or `name failed <cause>`, and exits 1 when any
 * listener failed.
 */
public final class ListenerProbe {
    private static final long TIMEOUT_MS = 15_000;

    public static void main(String[] args) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(Math.max(1, args.length));
        List<Future<String>> answers = new ArrayList<>();
        for (String arg : args) {
            int eq = arg.indexOf('=');
            String name = arg.substring(0, eq);
            Path file = Path.of(arg.substring(eq + 1));
            answers.add(pool.submit(() -> probe(name, file)));
        }
        boolean allOk = true;
        for (Future<String> answer : answers) {
            String line = answer.get();
            System.out.println(line);
            allOk &= line.split(" ", 3)[1].equals("ok");
        }
        pool.shutdownNow();
        System.out.flush();
        System.exit(allOk ? 0 : 1);
    }

    private static String probe(String name, Path file) {
        Properties props = new Properties();
        try (Reader reader = Files.newBufferedReader(file)) {
            props.load(reader);
        } catch (IOException e) {
            return name + " failed cannot read " + file + ": " + e.getMessage();
        }
        props.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, (int) TIMEOUT_MS);
        props.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, (int) TIMEOUT_MS);
        Admin admin = Admin.create(props);
        try {
            Collection<Node> nodes = admin.describeCluster().nodes().get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
            List<ConfigResource> brokers = nodes.stream()
                .map(n -> new ConfigResource(ConfigResource.Type.BROKER, n.idString()))
                .collect(Collectors.toList());
            admin.describeConfigs(brokers).all().get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
            String ids = nodes.stream().map(Node::id).sorted().map(String::valueOf).collect(Collectors.joining(","));
            return name + " ok " + ids;
        } catch (Exception e) {
            Throwable cause = e instanceof ExecutionException && e.getCause() != null ? e.getCause() : e;
            String message = String.valueOf(cause.getMessage()).replace('\n', ' ');
            return name + " failed " + cause.getClass().getSimpleName() + ": " + message;
        } finally {
            admin.close(Duration.ZERO);
        }
    }
}
