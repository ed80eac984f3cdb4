/**
 * `effect-a2a keygen`: an ES256 key pair to sign a card with (`playground
 * --sign-key`) and to verify it with (`probe --trust`).
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as jose from "jose"
import { generateKeyPairSync } from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"

/**
 * A key file that could not be written: an existing one is never replaced.
 *
 * @internal
 */
export class KeygenError extends Schema.TaggedError<KeygenError>("effect-a2a/KeygenError")("KeygenError", {
  reason: Schema.Literal("CannotWrite"),
  message: Schema.String
}) {}

/** Where keygen wrote the pair, and the key id both JWKs carry. @internal */
export interface Written {
  readonly kid: string
  readonly privateKey: string
  readonly publicKey: string
}

/**
 * Writes `card-signing.private.jwk` (readable by its owner only) and
 * `card-signing.public.jwk` in `dir`, their `kid` the RFC 7638 thumbprint
 * of the public key: the `kid` the server signs with when given the
 * private one.
 *
 * @internal
 */
export const write = (dir: string): Effect.Effect<Written, KeygenError> =>
  Effect.gen(function*() {
    const pair = generateKeyPairSync("ec", { namedCurve: "P-256" })
    const publicJwk = pair.publicKey.export({ format: "jwk" }) as jose.JWK
    const kid = yield* Effect.promise(() => jose.calculateJwkThumbprint(publicJwk))
    const privateJwk = { ...(pair.privateKey.export({ format: "jwk" }) as jose.JWK), kid, alg: "ES256", use: "sig" }
    const privateKey = path.resolve(dir, "card-signing.private.jwk")
    const publicKey = path.resolve(dir, "card-signing.public.jwk")
    yield* Effect.try({
      try: () => {
        fs.mkdirSync(dir, { recursive: true })
        // `wx`: an existing key is someone's; it is never replaced.
        fs.writeFileSync(privateKey, `${JSON.stringify(privateJwk, null, 2)}\n`, { flag: "wx", mode: 0o600 })
        fs.writeFileSync(publicKey, `${JSON.stringify({ ...publicJwk, kid, alg: "ES256", use: "sig" }, null, 2)}\n`, {
          flag: "wx"
        })
      },
      catch: (error) =>
        new KeygenError({ reason: "CannotWrite", message: error instanceof Error ? error.message : String(error) })
    })
    return { kid, privateKey, publicKey }
  })
