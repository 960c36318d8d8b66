import { modelSchema } from '@dap/contracts';
import { waitFor, type serviceClient } from '@dap/testing';

type Client = ReturnType<typeof serviceClient>;
type Response = Awaited<ReturnType<Client['post']>>;

/** A model just created: `status` (201 when it is ready at once, 202 while it trains), the exact DTO and its Location; its id. */
export function expectCreated(res: Response, status: 201 | 202): string {
  expect(res.status).toBe(status);
  expect(modelSchema.strict().safeParse(res.body).success).toBe(true);
  expect(res.headers.get('location')).toBe(`/v1/models/${res.body.id}`);
  return res.body.id;
}

/** The model once it is no longer training (ready or failed), read through the API; training takes seconds. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- asserted field by field
export async function untilTrained(client: Client, id: string): Promise<Record<string, any>> {
  const res = await waitFor(
    async () => {
      const r = await client.get(`/models/${id}`);
      return r.body?.status !== 'training' ? r : null;
    },
    { timeoutMs: 45_000, intervalMs: 100, what: `model ${id} to finish training` },
  );
  return res.body;
}
