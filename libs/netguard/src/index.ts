export { classifyAddress, isAllowedAddress, nameRefusal, refusal, type AddressClass } from './address-class.ts';
export { bareHost, DisallowedTargetError, guardedLookup, hostOf, HostNotFoundError, OutboundGuard, systemResolver, type GuardOptions, type Resolver } from './guard.ts';
export { checkTarget } from './check-target.ts';
export { guardedConnector, type Dial, type GuardedConnectorOptions } from './connector.ts';
