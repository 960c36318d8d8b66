export {
  AllowedRanges,
  canonicalAddress,
  classifyAddress,
  isAllowedAddress,
  nameRefusal,
  parseCidr,
  PRIVATE_RANGES,
  refusal,
  type AddressClass,
  type PrivateTargets,
} from './address-class.ts';
export { bareHost, DisallowedTargetError, hostOf, HostNotFoundError, OutboundGuard, portOf, systemResolver, type GuardOptions, type Resolver } from './guard.ts';
export { interfaceAddresses, PlatformEndpoints, type Endpoint } from './platform-endpoints.ts';
export { guardedConnector, SPARE_SLABS, type Dial, type GuardedConnectorOptions } from './connector.ts';
