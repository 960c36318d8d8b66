import { ConnectorCheckError } from './connector.ts';
import { connectionOf, publicConnection } from './db-spec.ts';

describe('connectionOf', () => {
  it('reads a URL: user and password percent-decoded, default port, sslmode', () => {
    const c = connectionOf('postgres', { url: 'postgresql://read%40er:p%3Ass%2Fw@db.example.com/shop?sslmode=verify-full' });
    expect(c).toEqual({ host: 'db.example.com', port: 5432, database: 'shop', user: 'read@er', password: 'p:ss/w', ssl: 'verify-full' });
    expect(connectionOf('mysql', { url: 'mysql://u:p@[::1]:3307/db' })).toMatchObject({ host: '::1', port: 3307, ssl: 'disable' });
    expect(connectionOf('mongodb', { url: 'mongodb://u:p@m.example.com/app?authSource=admin&tls=true' })).toMatchObject({ port: 27017, authSource: 'admin', ssl: 'verify-full' });
    expect(connectionOf('mongodb', { url: 'mongodb://u:p@m.example.com/app' }).authSource).toBe('app');
  });

  it('reads parts, with defaults', () => {
    expect(connectionOf('mysql', { host: 'h', database: 'd', user: 'u', password: 'p' })).toEqual({
      host: 'h',
      port: 3306,
      database: 'd',
      user: 'u',
      password: 'p',
      ssl: 'disable',
    });
    expect(connectionOf('mongodb', { host: 'h', database: 'd', user: 'u' }).authSource).toBe('admin');
    expect(connectionOf('mongodb', { host: 'h', database: 'd' }).user).toBeUndefined();
  });

  it('refuses an unknown sslmode and bad percent-encoding', () => {
    expect(() => connectionOf('postgres', { url: 'postgres://u:p@h/d?sslmode=prefer' })).toThrow(ConnectorCheckError);
    expect(() => connectionOf('postgres', { url: 'postgres://u:%E0%A4%A@h/d' })).toThrow(/percent-encoded/);
  });

  it('shows the connection without its password', () => {
    const shown = publicConnection(connectionOf('postgres', { url: 'postgres://u:hunter2@h:1/d' }));
    expect(shown).toEqual({ host: 'h', port: 1, database: 'd', user: 'u', ssl: 'disable', hasPassword: true });
    expect(JSON.stringify(shown)).not.toContain('hunter2');
  });
});
