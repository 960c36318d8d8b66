import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CountDownLatch;

import de.bwaldvogel.mongo.MongoBackend;
import de.bwaldvogel.mongo.MongoServer;
import de.bwaldvogel.mongo.MongoVersion;
import de.bwaldvogel.mongo.backend.h2.H2Backend;
import org.h2.mvstore.MVStore;

/**
 * MongoDB-wire server for local dev/test when no real mongod is installed.
 * Data lives in one H2 MVStore file, so restarting this process keeps it.
 *
 * Usage: java -cp ... MongoLauncher <host> <port> <h2-file>
 */
public final class MongoLauncher {
    /**
     * mongo-java-server announces at most maxWireVersion 8, which the Node.js driver 7.x rejects
     * ("requires at least 9 (MongoDB 4.4)"). Announce exactly that minimum: 4.4 / wire 9, so the
     * driver connects but does not assume newer server features.
     */
    private static final MongoVersion ANNOUNCED_VERSION = new MongoVersion() {
        @Override
        public List<Integer> getVersionArray() {
            return List.of(4, 4, 0);
        }

        @Override
        public int getWireVersion() {
            return 9;
        }
    };

    /**
     * The store commits in the background every second (MVStore's default, so a crash of this process may lose
     * the last second, as before). Its default write buffer is 1 MB: past it, the thread that writes commits
     * inline, and a MongoDB write that happens to cross it waited for the whole commit (15-45 ms spikes in
     * single inserts at 100 writes/s; with 64 MB the models' 100 predictions/s went from p99 8-14 ms to 7-9
     * ms, max 21-48 ms to 12-34 ms). A larger buffer leaves the commits to the background thread, which still
     * commits every second. A bigger page cache (64 MB, default 16) keeps the test stack's many collections'
     * pages in memory. System properties dap.mvstore.autoCommitBufferKb and dap.mvstore.cacheMb override them.
     */
    static MVStore openStore(Path file) {
        return new MVStore.Builder()
                .fileName(file.toString())
                .autoCommitBufferSize(Integer.getInteger("dap.mvstore.autoCommitBufferKb", 64 * 1024))
                .cacheSize(Integer.getInteger("dap.mvstore.cacheMb", 64))
                .open();
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 3) {
            System.err.println("usage: MongoLauncher <host> <port> <h2-file>");
            System.exit(2);
        }
        String host = args[0];
        int port = Integer.parseInt(args[1]);
        Path file = Path.of(args[2]).toAbsolutePath();
        Files.createDirectories(file.getParent());

        MongoBackend backend = new H2Backend(openStore(file)).version(ANNOUNCED_VERSION);
        MongoServer server = new MongoServer(backend);
        CountDownLatch stopped = new CountDownLatch(1);
        // Close on SIGTERM so the H2 store is flushed and not left half-written.
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            System.out.println("MongoLauncher: shutting down");
            server.shutdown();
            stopped.countDown();
        }, "mongo-shutdown"));

        server.bind(host, port);
        InetSocketAddress addr = server.getLocalAddress();
        // stack.sh waits for this exact line (plus the open port) before declaring mongo ready.
        System.out.println("MongoLauncher: listening on " + addr.getHostString() + ":" + addr.getPort()
                + " h2=" + file);
        System.out.flush();
        stopped.await();
    }
}
