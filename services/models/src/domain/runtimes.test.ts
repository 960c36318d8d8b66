import { newId } from '@dap/contracts';
import type { ArtifactRepository } from '../persistence/artifact.repository.ts';
import type { ModelRecord } from './model.ts';
import type { OnnxHost } from './onnx/onnx-runtime.ts';
import { OwnModelRuntimes } from './runtimes.ts';

describe('OwnModelRuntimes', () => {
  it('keeps a runtime per account: another account naming the same model and version never gets the owner’s', async () => {
    const owner = newId('acct');
    const other = newId('acct');
    const file = Uint8Array.from([1, 2, 3]);
    const asked: string[] = [];
    const artifacts = {
      data: async (accountId: string) => {
        asked.push(accountId);
        return accountId === owner ? { format: 'onnx', data: file } : null;
      },
    } as unknown as ArtifactRepository;
    const ran: { key: string; model: Uint8Array }[] = [];
    const host: OnnxHost = {
      inspect: async () => ({ inputs: [], outputs: [] }),
      run: async (key, _feeds, load) => {
        ran.push({ key, model: await load() });
        return [];
      },
    };
    const runtimes = new OwnModelRuntimes({ artifacts, onnx: host, maxEntries: 8 });
    const model = {
      id: newId('mdl'),
      kind: 'onnx',
      version: 1,
      onnx: { inputs: [{ name: 'X', elementType: 'float32', shape: ['N', 1] }], outputs: [], sizeBytes: 3, sha256: '' },
    } as unknown as ModelRecord;

    const mine = (await runtimes.runtimeFor(owner, model))!;
    expect(await runtimes.runtimeFor(owner, model)).toBe(mine); // positive control: cached for its owner
    const theirs = (await runtimes.runtimeFor(other, model))!;
    expect(theirs).not.toBe(mine);
    await mine.predict([]);
    await expect(theirs.predict([])).rejects.toThrow(/missing/);
    expect(asked).toEqual([owner, other]);
    expect(ran).toEqual([{ key: `${owner}/${model.id}@1`, model: file }]);

    runtimes.evict(other, model.id); // another account's eviction leaves the owner's runtime
    expect(await runtimes.runtimeFor(owner, model)).toBe(mine);
    runtimes.evict(owner, model.id);
    expect(await runtimes.runtimeFor(owner, model)).not.toBe(mine);
  });
});
