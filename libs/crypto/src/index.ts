export { open, seal, type Sealed } from './aead.ts';
