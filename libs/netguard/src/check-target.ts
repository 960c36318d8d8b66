import { isIP } from 'node:net';
import { isAllowedAddress, nameRefusal, refusal } from './address-class.ts';
import { hostOf, systemResolver, type Resolver } from './guard.ts';

/**
 * A registration-time look at a URL's target (a webhook endpoint): answers why it is refused, or null. A name
 * that does not resolve (yet) is accepted; the guard's `lookup` checks every connection again either way,
 * so this only turns an obviously internal target into a clear 4xx up front.
 */
export async function checkTarget(url: string, allowPrivate: boolean, resolve: Resolver = systemResolver, timeoutMs = 3_000): Promise<string | null> {
  let host: string;
  try {
    host = hostOf(new URL(url));
  } catch {
    return 'the URL cannot be parsed';
  }
  if (isIP(host)) return isAllowedAddress(host, allowPrivate) ? null : refusal(host);
  const lower = host.toLowerCase().replace(/\.$/, '');
  if (!allowPrivate && (lower === 'localhost' || lower.endsWith('.localhost'))) return `the host ${host} is loopback`;
  let timer: NodeJS.Timeout | undefined;
  try {
    const addresses = await Promise.race([
      resolve(host),
      new Promise<[]>((res) => {
        timer = setTimeout(() => res([]), timeoutMs);
      }),
    ]);
    const bad = addresses.find((a) => !isAllowedAddress(a.address, allowPrivate));
    return bad ? nameRefusal(host, bad.address) : null;
  } catch {
    return null;
  } finally {
    clearTimeout(timer);
  }
}
