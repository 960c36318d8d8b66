export { open, seal, type Sealed } from './aead.ts';
export { decodeKey, keySchema, SealedBox, SealError, type SealFailure } from './sealed-box.ts';
