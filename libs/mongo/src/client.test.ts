import { MongoClient } from 'mongodb';
import { describeMongoUrl, isRetriableAtStartup, mongoClientOptions, parseMongoUrl } from './client.ts';

const TIMEOUTS = { serverSelectionTimeoutMS: 3_000, connectTimeoutMS: 3_000, socketTimeoutMS: 30_000, maxPoolSize: 20 };

describe('mongoClientOptions', () => {
  it('talks directly and without retryable writes to a single host (the local wire-compatible server, a standalone mongod)', () => {
    for (const url of ['mongodb://127.0.0.1:27217', 'mongodb://mongo:27017/dap', 'mongodb://user:p%40ss@mongo:27017/dap?authSource=admin']) {
      expect(mongoClientOptions(url)).toEqual({ ...TIMEOUTS, retryWrites: false, directConnection: true });
    }
  });

  it.each([
    ['an SRV URL', 'mongodb+srv://app:pw@cluster0.abcde.mongodb.net/dap?retryWrites=true&w=majority'],
    ['an SRV URL without options', 'mongodb+srv://cluster0.abcde.mongodb.net/'],
    ['several hosts', 'mongodb://m1:27017,m2:27017,m3:27017/dap'],
    ['a replica set named on one host', 'mongodb://m1:27017/dap?replicaSet=rs0'],
    ['a load balancer', 'mongodb://lb:27017/?loadBalanced=true'],
  ])('keeps the driver defaults (discovery, retryable writes) for %s', (_what, url) => {
    const options = mongoClientOptions(url);
    expect(options).not.toHaveProperty('directConnection');
    expect(options).not.toHaveProperty('retryWrites');
    // The driver accepts them: forcing directConnection made it refuse these URLs outright.
    const client = new MongoClient(url, options);
    expect(client.options.directConnection).toBe(false);
    expect(client.options.retryWrites).toBe(true);
  });

  it('never overrides an option the URL sets, whatever its case', () => {
    expect(mongoClientOptions('mongodb://mongo:27017/?retryWrites=true')).toEqual({ ...TIMEOUTS, directConnection: true });
    expect(mongoClientOptions('mongodb://mongo:27017/?directconnection=false')).toEqual({ ...TIMEOUTS, retryWrites: false });
    const own = mongoClientOptions('mongodb://mongo:27017/?serverSelectionTimeoutMS=10000&MAXPOOLSIZE=5');
    expect(own).not.toHaveProperty('serverSelectionTimeoutMS');
    expect(own).not.toHaveProperty('maxPoolSize');
    const client = new MongoClient(
      'mongodb://mongo:27017/?serverSelectionTimeoutMS=10000&retryWrites=true',
      mongoClientOptions('mongodb://mongo:27017/?serverSelectionTimeoutMS=10000&retryWrites=true'),
    );
    expect(client.options.serverSelectionTimeoutMS).toBe(10_000);
    expect(client.options.retryWrites).toBe(true);
    expect(client.options.directConnection).toBe(true);
  });

  it('keeps the short timeouts everywhere unless the URL sets them', () => {
    expect(mongoClientOptions('mongodb+srv://cluster0.abcde.mongodb.net/')).toEqual(TIMEOUTS);
  });
});

describe('parseMongoUrl and describeMongoUrl', () => {
  it('finds hosts and options past credentials that contain @, : and ,', () => {
    expect(parseMongoUrl('mongodb://u%3Ax:p%40s%2Cs@h1:1,h2:2/db?replicaSet=rs&authSource=admin')).toEqual({
      srv: false,
      hosts: ['h1:1', 'h2:2'],
      options: new Map([
        ['replicaset', 'rs'],
        ['authsource', 'admin'],
      ]),
    });
    expect(parseMongoUrl('mongodb+srv://cluster0.example.net').hosts).toEqual(['cluster0.example.net']);
  });

  it('describes a URL for logs without credentials, database or options', () => {
    expect(describeMongoUrl('mongodb://app:hunter2@m1:27017,m2:27017/dap?authMechanismProperties=AWS_SESSION_TOKEN:abc')).toBe('mongodb://m1:27017,m2:27017');
    expect(describeMongoUrl('mongodb+srv://app:hunter2@cluster0.example.net/dap')).toBe('mongodb+srv://cluster0.example.net');
  });
});

describe('isRetriableAtStartup', () => {
  const err = (name: string, code?: number | string) => Object.assign(new Error(name), { name, code });
  it('retries a server that does not answer yet', () => {
    for (const e of [
      err('MongoServerSelectionError'),
      err('MongoNetworkError'),
      err('MongoNetworkTimeoutError'),
      err('MongoServerError', 91),
      err('MongoServerError', 10107),
      err('Error', 'ENOTFOUND'),
      err('Error', 'ECONNREFUSED'),
    ]) {
      expect([e.name, isRetriableAtStartup(e)]).toEqual([e.name, true]);
    }
  });
  it('fails at once on refused credentials, a bad URL or a bug', () => {
    for (const e of [err('MongoServerError', 18), err('MongoServerError', 13), err('MongoParseError'), err('MongoAPIError'), err('MongoInvalidArgumentError'), err('TypeError')]) {
      expect([e.name, e.code, isRetriableAtStartup(e)]).toEqual([e.name, e.code, false]);
    }
    expect(isRetriableAtStartup(null)).toBe(false);
  });
});
