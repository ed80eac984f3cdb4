/**
 * What a JWS signed by a public key may be: shared by whatever verifies one
 * against keys that are public.
 *
 * @internal
 */

/**
 * The asymmetric JWS algorithms. With a public key, `none` and `HS*` are how
 * signatures get forged: `HS256` with the public key as its secret verifies
 * for anyone.
 *
 * @internal
 */
export const asymmetric: ReadonlyArray<string> = [
  "RS256",
  "RS384",
  "RS512",
  "PS256",
  "PS384",
  "PS512",
  "ES256",
  "ES384",
  "ES512",
  "EdDSA",
  "Ed25519"
]
