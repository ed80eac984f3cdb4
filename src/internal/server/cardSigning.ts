/**
 * The cards signed once at start-up, with the SDK's
 * `generateAgentCardSignature`: ES256 and EdDSA signatures differ on every
 * signing, so a card signed per request would change its ETag each time.
 *
 * Each is signed over the form a verifier canonicalises: the card route
 * serves the card object as it is (as the SDK's Express `agentCardHandler`
 * does); JSON-RPC and HTTP+JSON serve the extended card in its proto-JSON
 * form (`AgentCard.toJSON`), which the SDK's clients decode back into the
 * object. The two differ in the `oneof` fields (`securitySchemes`):
 * `AgentCard.fromJSON`, the first step of the SDK's canonical form, drops
 * them from the object form. So the card's signature does not cover its
 * security schemes; the extended card carries two signatures, one over each
 * form, and the one over the JSON a caller receives covers them (the other
 * verifies only a canonical form without them, which that JSON's is not).
 *
 * @internal
 */
import { AgentCard, generateAgentCardSignature } from "@a2a-js/sdk"
import { Effect, Redacted } from "effect"
import * as jose from "jose"
import { createPrivateKey, createPublicKey, type JsonWebKey as NodeJsonWebKey, type KeyObject } from "node:crypto"
import type * as A2AServer from "../../A2AServer.js"
import { ConfigurationError } from "./executor.js"

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
    const kid = options.kid ?? ownKid ?? (yield* Effect.promise(() => jose.calculateJwkThumbprint(publicJwk as jose.JWK)))
    const generate = generateAgentCardSignature(key, { alg, kid, typ: "JOSE" })
    return (card) =>
      Effect.tryPromise({
        try: () => generate(card),
        catch: (error) => invalid(`the key cannot sign with ${alg}`, error)
      })
  })

/**
 * The card, signed over the object served at the card path, and the
 * extended card, signed over its proto-JSON form and over its object form;
 * as they are without `options`.
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
    const signedCard = yield* sign(card)
    if (extendedCard === undefined) return [signedCard, undefined] as const
    const signedJson = yield* sign(AgentCard.toJSON(extendedCard) as AgentCard)
    return [signedCard, yield* sign({ ...extendedCard, signatures: signedJson.signatures })] as const
  })
