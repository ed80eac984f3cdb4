/**
 * The cards signed once at start-up, with the SDK's
 * `generateAgentCardSignature`: ES256 and EdDSA signatures differ on every
 * signing, so a card signed per request would change its ETag each time.
 *
 * Each is signed over its proto-JSON form (`AgentCard.toJSON`), the form
 * every JSON transport serves it in, the card route included. The SDK's
 * canonical form (`AgentCard.fromJSON`, then `toJSON`, then JCS) reads that
 * form whole; from the SDK's object form it drops the `oneof` fields (the
 * security schemes), so a signature over the object form would not cover
 * where a caller sends its credentials.
 *
 * @internal
 */
import { AgentCard, generateAgentCardSignature } from "@a2a-js/sdk"
import * as Effect from "effect/Effect"
import * as Redacted from "effect/Redacted"
import * as jose from "jose"
import { createPrivateKey, createPublicKey, type JsonWebKey as NodeJsonWebKey, type KeyObject } from "node:crypto"
import type * as A2AServer from "../../../A2AServer.js"
import { ConfigurationError } from "../../serverErrors.js"

/** Signs a card: the card with one more signature. */
type Signer = (card: AgentCard) => Effect.Effect<AgentCard, ConfigurationError>

// Node's and jose's messages name the key's type or curve, never its material; a
// JWK's own fields are not read into them. JSON.parse's would quote the text: see `parsed`.
const invalid = (what: string, error: unknown) =>
  new ConfigurationError({
    reason: "InvalidOption",
    message: `signing: ${what}${error instanceof Error && error.message !== "" ? ` (${error.message})` : ""}`
  })

const fromJwk = (jwk: jose.JWK) => ({
  key: createPrivateKey({ key: jwk as NodeJsonWebKey, format: "jwk" }),
  kid: jwk.kid
})

const parsed = (text: string): jose.JWK => {
  try {
    return JSON.parse(text)
  } catch {
    throw new Error("the JWK is not valid JSON")
  }
}

/** A PEM or JWK text (a file's, as given), or a JWK; with the JWK's `kid`, if any. */
const load = (key: A2AServer.SigningOptions["key"]): { readonly key: KeyObject; readonly kid: string | undefined } => {
  if (!Redacted.isRedacted(key)) return fromJwk(key)
  const text = Redacted.value(key).trim()
  return text.startsWith("{") ? fromJwk(parsed(text)) : { key: createPrivateKey(text), kid: undefined }
}

/** The algorithm a key signs with when none is named: the one its type and curve allow. */
const algorithmOf = (key: KeyObject): A2AServer.SigningAlgorithm | undefined => {
  switch (key.asymmetricKeyType) {
    case "ec":
      return ({ "prime256v1": "ES256", "secp384r1": "ES384", "secp521r1": "ES512" } as const)[
        key.asymmetricKeyDetails?.namedCurve as "prime256v1"
      ]
    case "rsa":
      return "RS256"
    case "rsa-pss":
      return "PS256"
    case "ed25519":
      return "EdDSA"
    default:
      return undefined
  }
}

/**
 * The signer of `options`: a key that does not load fails here, and one
 * that cannot sign with the algorithm named fails at its first card (both
 * at start-up), with a {@link ConfigurationError} that never holds the
 * key. `kid` defaults to the JWK's own, else to the public key's
 * RFC 7638 thumbprint.
 */
const make = (options: A2AServer.SigningOptions): Effect.Effect<Signer, ConfigurationError> =>
  Effect.gen(function*() {
    const { key, kid: ownKid } = yield* Effect.try({
      try: () => load(options.key),
      catch: (error) => invalid("the key is not a private key in PEM or JWK form", error)
    })
    const alg = options.alg ?? algorithmOf(key)
    if (alg === undefined) {
      return yield* new ConfigurationError({
        reason: "InvalidOption",
        message: `signing: no algorithm for a ${key.asymmetricKeyType} key; name one in \`alg\``
      })
    }
    const publicJwk = createPublicKey(key).export({ format: "jwk" })
    const kid = options.kid ?? ownKid ??
      (yield* Effect.promise(() => jose.calculateJwkThumbprint(publicJwk as jose.JWK)))
    const generate = generateAgentCardSignature(key, { alg, kid, typ: "JOSE" })
    return (card) =>
      Effect.tryPromise({
        try: () => generate(card),
        catch: (error) => invalid(`the key cannot sign with ${alg}`, error)
      })
  })

/**
 * `card` with the signature over its proto-JSON form: `canonicalizeAgentCard`
 * of what is served covers every field served.
 */
const signServed = (sign: Signer, card: AgentCard): Effect.Effect<AgentCard, ConfigurationError> =>
  Effect.map(sign(AgentCard.toJSON(card) as AgentCard), ({ signatures }) => ({ ...card, signatures }))

/**
 * The card and the extended card, each signed over its proto-JSON form; as
 * they are without `options`.
 *
 * @internal
 */
export const signCards = (
  options: A2AServer.SigningOptions | undefined,
  card: AgentCard,
  extendedCard: AgentCard | undefined
): Effect.Effect<readonly [AgentCard, AgentCard | undefined], ConfigurationError> =>
  options === undefined ? Effect.succeed([card, extendedCard]) : Effect.gen(function*() {
    const sign = yield* make(options)
    return [
      yield* signServed(sign, card),
      extendedCard === undefined ? undefined : yield* signServed(sign, extendedCard)
    ] as const
  })
