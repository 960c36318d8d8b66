import { MongoClient, type Db } from 'mongodb';

export interface MongoHandle {
  client: MongoClient;
  db: Db;
  ping(): Promise<void>;
  close(): Promise<void>;
}

/** Short timeouts so an unavailable database becomes a quick 503, never a hanging request. */
export async function connectMongo(url: string, dbName: string): Promise<MongoHandle> {
  const client = new MongoClient(url, {
    serverSelectionTimeoutMS: 3_000,
    connectTimeoutMS: 3_000,
    socketTimeoutMS: 30_000,
    maxPoolSize: 20,
    retryWrites: false, // the wire-compatible local server has no retryable writes
    directConnection: true,
  });
  await client.connect();
  const db = client.db(dbName);
  return {
    client,
    db,
    ping: async () => void (await db.command({ ping: 1 })),
    close: () => client.close(),
  };
}
