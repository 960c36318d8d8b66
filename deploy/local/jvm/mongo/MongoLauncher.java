import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.Date;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;

import de.bwaldvogel.mongo.MongoBackend;
import de.bwaldvogel.mongo.MongoDatabase;
import de.bwaldvogel.mongo.MongoServer;
import de.bwaldvogel.mongo.MongoVersion;
import de.bwaldvogel.mongo.MongoCollection;
import de.bwaldvogel.mongo.backend.CollectionOptions;
import de.bwaldvogel.mongo.backend.CursorRegistry;
import de.bwaldvogel.mongo.backend.Index;
import de.bwaldvogel.mongo.backend.IndexKey;
import de.bwaldvogel.mongo.backend.KeyValue;
import de.bwaldvogel.mongo.backend.Missing;
import de.bwaldvogel.mongo.backend.QueryResult;
import de.bwaldvogel.mongo.backend.Utils;
import de.bwaldvogel.mongo.backend.h2.H2Collection;
import de.bwaldvogel.mongo.backend.h2.H2Backend;
import de.bwaldvogel.mongo.backend.h2.H2Database;
import de.bwaldvogel.mongo.bson.BsonTimestamp;
import de.bwaldvogel.mongo.bson.Decimal128;
import de.bwaldvogel.mongo.bson.Document;
import de.bwaldvogel.mongo.bson.ObjectId;
import de.bwaldvogel.mongo.wire.bson.BsonDecoder;
import de.bwaldvogel.mongo.wire.bson.BsonEncoder;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import org.h2.mvstore.DataUtils;
import org.h2.mvstore.MVMap;
import org.h2.mvstore.MVStore;
import org.h2.mvstore.WriteBuffer;
import org.h2.mvstore.type.ObjectDataType;

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
        MVStore.Builder builder = new MVStore.Builder()
                .fileName(file.toString())
                .autoCommitBufferSize(Integer.getInteger("dap.mvstore.autoCommitBufferKb", 64 * 1024))
                .cacheSize(Integer.getInteger("dap.mvstore.cacheMb", 64));
        // No background commit: the store is written when it closes (SIGTERM). For the storage test's old-format
        // phase only: H2's default key type caches its last value type in a field that the background writer
        // and a request thread can both replace at once, which then fails a comparison ("Can not compare").
        // The launcher's own key order does not go through that field.
        if (Boolean.getBoolean("dap.mvstore.commitOnCloseOnly")) builder.autoCommitDisabled();
        return builder.open();
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

        // -Ddap.mongo.h2Defaults=true keeps H2's own key order and value format (as before; tests use it to
        // write an old-format store); the next start without it re-sorts those indexes once and reads old values.
        MVStore store = openStore(file);
        MongoBackend backend = (Boolean.getBoolean("dap.mongo.h2Defaults") ? new H2Backend(store) : new OrderedKeysBackend(store))
                .version(ANNOUNCED_VERSION);
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

    /**
     * The H2 backend with index maps ordered by {@link KeyOrder}. mongo-java-server keeps each unique index
     * (every collection's `_id` index among them) in an MVMap keyed by its KeyValue class, which is neither
     * Comparable nor a type H2 knows, so H2's default key type orders keys by comparing their Java
     * serialisations: every step of every binary search serialised two keys. A JFR profile of the webhook
     * delivery benchmark put 63 % of this server's CPU there. Collections' document maps store BSON
     * ({@link DocumentValues}); the maps' names and what the backend does with them are unchanged.
     */
    static final class OrderedKeysBackend extends H2Backend {
        /** H2Database opens its indexes in its constructor, before a subclass's own fields are set. */
        private static MVStore store;

        OrderedKeysBackend(MVStore mvStore) {
            super(mvStore);
        }

        private static synchronized void useStore(MVStore mvStore) {
            store = mvStore;
        }

        @Override
        protected MongoDatabase openOrCreateDatabase(String databaseName) {
            useStore(getMvStore());
            return new OrderedKeysDatabase(databaseName, getMvStore(), getCursorRegistry());
        }

        static MVStore store() {
            return store;
        }
    }

    static final class OrderedKeysDatabase extends H2Database {
        OrderedKeysDatabase(String databaseName, MVStore mvStore, CursorRegistry cursors) {
            super(databaseName, mvStore, cursors);
        }

        /**
         * Opens the collection's document map with BSON values and locked keys first, and the collection as an
         * {@link IndexedCollection}. The maps' names are H2Database's own ("databases." and "meta." + namespace).
         */
        @Override
        protected MongoCollection<Object> openOrCreateCollection(String collectionName, CollectionOptions options) {
            MVStore mvStore = OrderedKeysBackend.store();
            String namespace = getFullCollectionNamespace(collectionName);
            DocumentValues.openDataMap(mvStore, "databases." + namespace);
            MVMap<Object, Document> dataMap = mvStore.openMap("databases." + namespace);
            MVMap<String, Object> metaMap = mvStore.openMap("meta." + namespace);
            return new IndexedCollection(this, collectionName, options, dataMap, metaMap, cursorRegistry);
        }

        /** mongo-java-server keeps no index that is not unique; this keeps one in memory (see SecondaryIndex). */
        @Override
        protected Index<Object> openOrCreateSecondaryIndex(String collectionName, String indexName, List<IndexKey> keys, boolean sparse) {
            return new SecondaryIndex(indexName, keys, sparse);
        }

        /** Opens the index map with the fast key order first; H2Database's own openMap then finds it open. */
        @Override
        protected Index<Object> openOrCreateUniqueIndex(String collectionName, String indexName, List<IndexKey> keys, boolean sparse) {
            KeyOrder.openIndexMap(OrderedKeysBackend.store(), getFullCollectionNamespace(collectionName) + "._index_" + indexName);
            return super.openOrCreateUniqueIndex(collectionName, indexName, keys, sparse);
        }
    }

    /**
     * A collection that answers a query from an index whenever the query pins that index's fields by equality,
     * not only when it names exactly those fields (mongo-java-server's own rule, kept first): a unique index when
     * the query pins all its fields (`{ _id, accountId, deletedAt }` reads one document by `_id`, as MongoDB
     * does), else the secondary index whose leading fields the query pins that gives the fewest documents
     * (`{ accountId, deletedAt }` through `{ accountId: 1, _id: -1 }`). Every document an index gives is still
     * checked against the whole query.
     */
    static final class IndexedCollection extends H2Collection {
        /** -Ddap.mongo.logScans=true prints each query that reads the whole collection (the launcher's test, finding a missing index). */
        private static final boolean LOG_SCANS = Boolean.getBoolean("dap.mongo.logScans");

        IndexedCollection(MongoDatabase database, String name, CollectionOptions options, MVMap<Object, Document> dataMap,
                MVMap<String, Object> metaMap, CursorRegistry cursors) {
            super(database, name, options, dataMap, metaMap, cursors);
        }

        @Override
        protected QueryResult queryDocuments(Document query, Document orderBy, int skip, int limit, int batchSize, Document fieldSelector) {
            List<Index<Object>> indexes = getIndexes();
            if (indexes.stream().anyMatch(index -> index.canHandle(query))) {
                return super.queryDocuments(query, orderBy, skip, limit, batchSize, fieldSelector);
            }
            // Sizes first: only the chosen index's documents are copied.
            SecondaryIndex narrowest = null;
            long narrowestSize = Long.MAX_VALUE;
            for (Index<Object> index : indexes) {
                if (index instanceof SecondaryIndex secondary) {
                    long size = secondary.sizeForLeadingFields(query);
                    if (size >= 0 && size < narrowestSize) {
                        narrowest = secondary;
                        narrowestSize = size;
                    }
                } else if (index.isUnique()) {
                    Document part = new Document();
                    for (IndexKey key : index.getKeys()) {
                        if (!query.containsKey(key.getKey())) {
                            part = null;
                            break;
                        }
                        part.put(key.getKey(), query.get(key.getKey()));
                    }
                    if (part != null && index.canHandle(part)) return matchDocuments(query, index.getPositions(part), orderBy, skip, limit, batchSize, fieldSelector);
                }
            }
            if (narrowest != null) return matchDocuments(query, narrowest.positionsForLeadingFields(query), orderBy, skip, limit, batchSize, fieldSelector);
            if (LOG_SCANS) System.out.println("MongoLauncher: scan " + getFullName() + " " + query.keySet());
            return super.queryDocuments(query, orderBy, skip, limit, batchSize, fieldSelector);
        }
    }

    /**
     * A non-unique index (`createIndex({ _outboxPending: 1 })`, `{ accountId: 1, _id: -1 }`, ...), which
     * mongo-java-server accepts and ignores: without it the outbox relay's sweep for pending documents read
     * every document of the collection each time (the accounts service's, every 250 ms, 200,000 documents with
     * 100,000 keys), and every per-account list read every account's documents. Kept in memory and rebuilt
     * from the documents when the server opens the collection, as mongo-java-server does for an index it finds
     * empty. It answers equality on its first field, or its first two, with plain values (string, number,
     * boolean, date, ObjectId); anything else is left to a scan, as before. The partial filter of a partial
     * index is not applied: the index holds every document, and the query still checks each one. A document it
     * cannot index (parallel arrays) turns it off: queries scan again. Memory: about 100-200 bytes per document
     * and distinct value kept.
     */
    static final class SecondaryIndex extends Index<Object> {
        /**
         * Leading fields kept: one, and two where the second is not `_id` (a level per document is memory for
         * nothing: `_id` has its own index). A query pinning more fields is read through the first ones.
         */
        private static final int MAX_LEVELS = 2;
        /** Per number of leading fields, each value's documents: one position, or a PositionSet of several. */
        private final List<Map<KeyValue, Object>> levels = new ArrayList<>();
        /**
         * Documents with no key at all (an empty array in an indexed field): they may still match a query on the
         * fields before it, so every lookup includes them (the query checks each document anyway).
         */
        private final Set<Object> unkeyed = new LinkedHashSet<>();
        private long count;
        private boolean usable = true;

        /** Positions of one key where there are several (a position is a document's `_id`, never a Set). */
        private static final class PositionSet extends LinkedHashSet<Object> {
            private static final long serialVersionUID = 1L;
        }

        SecondaryIndex(String name, List<IndexKey> keys, boolean sparse) {
            super(name, keys, sparse);
            for (int n = 1; n <= Math.min(MAX_LEVELS, keys.size()); n++) {
                if (n == 1 || !keys.get(n - 1).getKey().equals("_id")) levels.add(new HashMap<>());
            }
        }

        /** Null for a document a sparse index leaves out (none of its fields). */
        private Set<KeyValue> keyValuesOf(Document document) {
            if (isSparse() && keys().stream().allMatch(key -> Utils.getSubdocumentValue(document, key) instanceof Missing)) return null;
            return getKeyValues(document);
        }

        private static KeyValue leading(KeyValue kv, int fields) {
            if (fields == kv.size()) return kv;
            List<Object> values = new ArrayList<>(fields);
            for (int i = 0; i < fields; i++) values.add(kv.get(i));
            return new KeyValue(values);
        }

        private void link(Document document, Object position) {
            if (!usable) return;
            try {
                Set<KeyValue> kvs = keyValuesOf(document);
                if (kvs == null) return;
                if (kvs.isEmpty()) unkeyed.add(position);
                for (KeyValue kv : kvs) {
                    for (int n = 1; n <= levels.size(); n++) {
                        levels.get(n - 1).merge(leading(kv, n), position, (old, p) -> {
                            if (old instanceof PositionSet set) {
                                set.add(p);
                                return set;
                            }
                            if (old.equals(p)) return old;
                            PositionSet set = new PositionSet();
                            set.add(old);
                            set.add(p);
                            return set;
                        });
                    }
                }
            } catch (RuntimeException e) {
                turnOff();
            }
        }

        private void unlink(Document document, Object position) {
            if (!usable) return;
            try {
                unkeyed.remove(position);
                Set<KeyValue> kvs = keyValuesOf(document);
                for (KeyValue kv : kvs == null ? Set.<KeyValue>of() : kvs) {
                    for (int n = 1; n <= levels.size(); n++) {
                        levels.get(n - 1).computeIfPresent(leading(kv, n), (k, old) -> {
                            if (!(old instanceof PositionSet set)) return old.equals(position) ? null : old;
                            set.remove(position);
                            return set.isEmpty() ? null : set.size() == 1 ? set.iterator().next() : set;
                        });
                    }
                }
            } catch (RuntimeException e) {
                turnOff();
            }
        }

        private void turnOff() {
            usable = false;
            levels.forEach(Map::clear);
            unkeyed.clear();
        }

        /** A document's position in the H2 backend is its `_id`. */
        private static Object positionOf(Document document) {
            return Missing.ofNullable(document.get("_id"));
        }

        @Override
        public synchronized Object getPosition(Document document) {
            return positionOf(document);
        }

        @Override
        public void checkAdd(Document document, MongoCollection<Object> collection) {
            // Not unique: nothing can conflict.
        }

        @Override
        public synchronized void add(Document document, Object position, MongoCollection<Object> collection) {
            count++;
            link(document, position);
        }

        @Override
        public synchronized Object remove(Document document) {
            Object position = positionOf(document);
            count--;
            unlink(document, position);
            return position;
        }

        @Override
        public void checkUpdate(Document oldDocument, Document newDocument, MongoCollection<Object> collection) {
            // Not unique: nothing can conflict.
        }

        @Override
        public synchronized void updateInPlace(Document oldDocument, Document newDocument, Object position, MongoCollection<Object> collection) {
            unlink(oldDocument, position);
            link(newDocument, position);
        }

        private static boolean isPlain(Object value) {
            return value instanceof String || value instanceof Number || value instanceof Boolean || value instanceof Date || value instanceof ObjectId;
        }

        /** How many of the kept leading fields the query gives plain values for. */
        private int leadingFieldsPinned(Document query) {
            int n = 0;
            for (String key : keys().subList(0, levels.size())) {
                if (!isPlain(query.get(key))) break;
                n++;
            }
            return n;
        }

        /** mongo-java-server's own rule (a query on exactly the index's fields); others go through positionsForLeadingFields. */
        @Override
        public synchronized boolean canHandle(Document query) {
            return usable && query.keySet().equals(keySet()) && leadingFieldsPinned(query) == levels.size() && levels.size() == keys().size();
        }

        @Override
        public synchronized Iterable<Object> getPositions(Document query) {
            return positionsForLeadingFields(query);
        }

        /**
         * What the index holds for the query's values on as many leading fields as the query pins (each entry one
         * position or a PositionSet); null when it pins none. The values go through the same key extraction as
         * stored ones (dotted keys nested).
         */
        private List<Object> entriesForLeadingFields(Document query) {
            int pinned = usable ? leadingFieldsPinned(query) : 0;
            if (pinned == 0) return null;
            Document probe = new Document();
            for (String key : keys().subList(0, pinned)) {
                String[] path = key.split("\\.");
                Document at = probe;
                for (int i = 0; i < path.length - 1; i++) {
                    Object next = at.get(path[i]);
                    if (!(next instanceof Document)) {
                        next = new Document();
                        at.put(path[i], next);
                    }
                    at = (Document) next;
                }
                at.put(path[path.length - 1], query.get(key));
            }
            List<Object> entries = new ArrayList<>();
            for (KeyValue kv : getKeyValues(probe)) {
                Object at = levels.get(pinned - 1).get(leading(kv, pinned));
                if (at != null) entries.add(at);
            }
            return entries;
        }

        /** How many documents positionsForLeadingFields would give (at most), without copying them; -1 when it would give null. */
        synchronized long sizeForLeadingFields(Document query) {
            List<Object> entries = entriesForLeadingFields(query);
            if (entries == null) return -1;
            long size = unkeyed.size();
            for (Object at : entries) size += at instanceof PositionSet set ? set.size() : 1;
            return size;
        }

        /** The documents whose leading fields have the query's values, with the unkeyed ones; null when the query pins none. */
        synchronized Collection<Object> positionsForLeadingFields(Document query) {
            List<Object> entries = entriesForLeadingFields(query);
            if (entries == null) return null;
            Set<Object> found = new LinkedHashSet<>(unkeyed);
            for (Object at : entries) {
                if (at instanceof PositionSet set) found.addAll(set);
                else found.add(at);
            }
            return new ArrayList<>(found);
        }

        @Override
        public synchronized long getCount() {
            return count;
        }

        @Override
        public long getDataSize() {
            return 0;
        }

        @Override
        public synchronized void drop() {
            levels.forEach(Map::clear);
            unkeyed.clear();
            count = 0;
        }
    }

    /**
     * H2's ObjectDataType with every method that consults its `last` type under one lock. That field is
     * switched by whichever thread last handled a value of another type, and compare() of two serialised
     * objects (ObjectIds, embedded documents) reads it twice: when the background writer switched it in
     * between, the two reads disagree and H2 throws "Can not compare", which the client sees as a failed
     * write ("Unknown error: Can not compare [2.3.232/0]"). Order and format are ObjectDataType's own, so
     * stores need nothing. Keys of document maps use it, and index keys through KeyOrder.
     */
    static class LockedObjectType extends ObjectDataType {
        @Override
        public synchronized int compare(Object a, Object b) {
            return super.compare(a, b);
        }

        @Override
        public synchronized int getMemory(Object obj) {
            return super.getMemory(obj);
        }

        @Override
        public synchronized void write(WriteBuffer buff, Object obj) {
            super.write(buff, obj);
        }

        @Override
        public synchronized Object read(ByteBuffer buff) {
            return super.read(buff);
        }
    }

    /**
     * A total order on index keys that compares their values directly: element by element, first by a rank
     * of the value's exact class, then by the class's own order for String, Integer, Long, Double, Boolean,
     * ObjectId, Date, Instant and UUID, whose equality is that of their serialised forms; any other value
     * (embedded documents, Missing, binary, ...) by class name and then its serialised bytes, as before. Two
     * keys are equal exactly when H2's default order found them equal, so uniqueness is unchanged; only
     * the order of distinct keys differs, which nothing relies on (index maps are read by key or whole).
     * Serialisation on disk is ObjectDataType's own, unchanged.
     */
    static final class KeyOrder extends LockedObjectType {
        /** Index maps rebuilt in this order, by map name: maps written by earlier versions are re-sorted once. */
        private static final String ORDERED_MAPS = "$dap.keyOrder";

        static synchronized void openIndexMap(MVStore mvStore, String name) {
            boolean existed = mvStore.hasMap(name);
            MVMap<Object, Object> map = mvStore.openMap(name, new MVMap.Builder<Object, Object>().keyType(new KeyOrder()));
            if (!(map.getKeyType() instanceof KeyOrder)) {
                System.err.println("MongoLauncher: index map " + name + " was opened before its key order was set");
                return;
            }
            MVMap<String, Integer> ordered = mvStore.openMap(ORDERED_MAPS);
            if (ordered.containsKey(name)) return;
            if (existed && !map.isEmpty()) {
                // Sorted by serialised bytes: walk it (no comparisons) and insert again in this order.
                List<Map.Entry<Object, Object>> entries = new ArrayList<>();
                for (Map.Entry<Object, Object> e : map.entrySet()) entries.add(Map.entry(e.getKey(), e.getValue()));
                map.clear();
                for (Map.Entry<Object, Object> e : entries) map.put(e.getKey(), e.getValue());
                System.out.println("MongoLauncher: index " + name + " re-sorted (" + entries.size() + " keys)");
            }
            ordered.put(name, 1);
        }

        @Override
        public int compare(Object a, Object b) {
            if (a == b) return 0;
            if (a instanceof KeyValue ka && b instanceof KeyValue kb) {
                int n = Math.min(ka.size(), kb.size());
                for (int i = 0; i < n; i++) {
                    int c = compareValues(ka.get(i), kb.get(i));
                    if (c != 0) return c;
                }
                return Integer.compare(ka.size(), kb.size());
            }
            return super.compare(a, b);
        }

        private static final List<Class<?>> DIRECT = List.of(
                String.class, Integer.class, Long.class, Double.class, Boolean.class, ObjectId.class, Date.class,
                java.time.Instant.class, UUID.class);
        private static final int OTHER = DIRECT.size() + 1;

        private static int rank(Object v) {
            if (v == null) return 0;
            int i = DIRECT.indexOf(v.getClass());
            return i >= 0 ? i + 1 : OTHER;
        }

        @SuppressWarnings({"unchecked", "rawtypes"})
        static int compareValues(Object x, Object y) {
            int rx = rank(x), ry = rank(y);
            if (rx != ry) return Integer.compare(rx, ry);
            if (rx == 0) return 0;
            if (rx != OTHER) return ((Comparable) x).compareTo(y);
            int c = x.getClass().getName().compareTo(y.getClass().getName());
            return c != 0 ? c : compareNotNull(serialize(x), serialize(y));
        }
    }

    /**
     * Documents stored as BSON (mongo-java-server's own wire codec) instead of Java serialisation, which was
     * the background commit's main cost: every commit writes each changed page whole, so a document is
     * serialised again whenever a neighbour on its page changes. A BSON value carries a tag byte that H2's
     * ObjectDataType never writes; values without it (stores written before) are read as before, and a
     * document holding anything whose class the codec would not give back unchanged is still serialised the
     * old way, so what a restart reads back is exactly what was stored.
     */
    static final class DocumentValues extends ObjectDataType {
        /** ObjectDataType's tags are 0-19 and 32-119. */
        private static final byte BSON = (byte) 0xB5;

        static synchronized void openDataMap(MVStore mvStore, String name) {
            MVMap<Object, Object> map = mvStore.openMap(name, new MVMap.Builder<Object, Object>().keyType(new LockedObjectType()).valueType(new DocumentValues()));
            if (!(map.getValueType() instanceof DocumentValues) || !(map.getKeyType() instanceof LockedObjectType)) {
                System.err.println("MongoLauncher: document map " + name + " was opened before its key and value types were set");
            }
        }

        @Override
        public void write(WriteBuffer buff, Object obj) {
            if (obj instanceof Document doc && roundTrips(doc)) {
                ByteBuf buf = Unpooled.buffer(512);
                BsonEncoder.encodeDocument(doc, buf);
                int n = buf.readableBytes();
                buff.put(BSON).putVarInt(n).put(buf.array(), buf.arrayOffset() + buf.readerIndex(), n);
                return;
            }
            super.write(buff, obj);
        }

        @Override
        public Object read(ByteBuffer buff) {
            if (buff.get(buff.position()) != BSON) return super.read(buff);
            buff.get();
            byte[] bytes = new byte[DataUtils.readVarInt(buff)];
            buff.get(bytes);
            return BsonDecoder.decodeBson(Unpooled.wrappedBuffer(bytes));
        }

        /** Classes the BSON codec decodes to exactly what was encoded. */
        private static boolean roundTrips(Object v) {
            if (v == null) return true;
            Class<?> c = v.getClass();
            if (c == Document.class) {
                for (Map.Entry<String, Object> e : ((Document) v).entrySet()) {
                    if (!roundTrips(e.getValue())) return false;
                }
                return true;
            }
            if (c == ArrayList.class) {
                for (Object item : (List<?>) v) {
                    if (!roundTrips(item)) return false;
                }
                return true;
            }
            // BSON dates hold milliseconds: an Instant with a finer part (made by the server) is not kept exactly.
            if (c == java.time.Instant.class) return ((java.time.Instant) v).getNano() % 1_000_000 == 0;
            return c == String.class || c == Integer.class || c == Long.class || c == Double.class || c == Boolean.class
                    || c == ObjectId.class || c == BsonTimestamp.class || c == Decimal128.class
                    || c == UUID.class;
        }
    }
}
