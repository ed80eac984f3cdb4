import { AgentCard, TaskState, verifyAgentCardSignature } from "@a2a-js/sdk"
import { NodeContext } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Console, Effect, Either, Logger, LogLevel, Redacted } from "effect"
import * as jose from "jose"
import { generateKeyPairSync, type KeyObject } from "node:crypto"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as A2AServer from "../src/A2AServer.js"
import * as AgentExecutor from "../src/AgentExecutor.js"
import * as Authentication from "../src/Authentication.js"
import * as Cli from "../src/Cli.js"
import * as trust from "../src/internal/client/card/trust.js"
import * as RemoteAgent from "../src/RemoteAgent.js"
import { callerOn, keyOf, serve, settle, taskOf, transports } from "./fixtures/callers.js"
import { oauthSchemes, tokenUrl } from "./fixtures/cards.js"
import { changedAt, type Json, leaves } from "./fixtures/json.js"
import { json, listen } from "./fixtures/peers.js"

const card = { name: "signed", description: "A signed card" }
const agent: AgentExecutor.Agent = () => Effect.succeed(AgentExecutor.completedText("ok"))
const apiKey = "k-signing-5e1a"

const ecPair = () => generateKeyPairSync("ec", { namedCurve: "P-256" })
const jwkOf = (key: KeyObject) => key.export({ format: "jwk" }) as jose.JWK

/** The SDK's verifier with one trusted key: resolves, or rejects; the kids it was asked for. */
const verifyWith = (publicKey: jose.JWK, value: unknown) =>
  Effect.gen(function*() {
    const asked: Array<string> = []
    const verified = yield* Effect.promise(() =>
      verifyAgentCardSignature(async (kid) => {
        asked.push(kid)
        return publicKey
      })(value as never).then(() => true, () => false)
    )
    return { verified, asked }
  })

const getCard = (url: string, headers: Record<string, string> = {}) =>
  Effect.promise(async () => {
    const response = await fetch(`${url}${A2AServer.cardPath}`, { headers })
    return { etag: response.headers.get("etag"), body: await response.json() as Record<string, any> }
  })

// The SDK's verifier logs every failed attempt to console.debug; the failures here are meant.
/* eslint-disable no-console -- silences the SDK's console.debug, which is what this is for */
const quietDebug = Effect.acquireRelease(
  Effect.sync(() => {
    const debug = console.debug
    console.debug = () => {}
    return debug
  }),
  (debug) => Effect.sync(() => (console.debug = debug))
)
/* eslint-enable no-console */

/** A card that sends callers' credentials somewhere: an OAuth2 scheme whose token URL an attacker would swap. */
const oauthCard: A2AServer.CardOptions = {
  ...card,
  securitySchemes: oauthSchemes,
  securityRequirements: [{ schemes: { oauth: { list: ["book"] } } }]
}

/** A card with every field of the v1.0 card, each with a value. */
const everyField: A2AServer.CardOptions = {
  ...oauthCard,
  version: "2.0.0",
  provider: { url: "https://example.com", organization: "Example" },
  documentationUrl: "https://example.com/docs",
  iconUrl: "https://example.com/icon.png",
  defaultInputModes: ["text/plain", "application/json"],
  defaultOutputModes: ["text/plain"],
  capabilities: {
    streaming: true,
    pushNotifications: false,
    extensions: [{ uri: "https://example.com/ext", description: "an extension", required: false, params: { level: 1 } }]
  },
  skills: [{
    id: "book",
    name: "Book",
    description: "books a flight",
    tags: ["travel"],
    examples: ["book 4821"],
    inputModes: ["text/plain"],
    outputModes: ["text/plain"],
    securityRequirements: [{ schemes: { oauth: { list: ["book"] } } }]
  }]
}

/** Serves `body` at the card path, as a server in the middle would. */
const servingCard = (body: unknown) =>
  listen((req, res) => req.url?.startsWith(A2AServer.cardPath) ? json(res, 200, body) : json(res, 404, {}))

describe("A2AServer signing", () => {
  it.scopedLive("the card verifies with the SDK's verifyAgentCardSignature, with the same signature and ETag on every request; the extended card too", () =>
    Effect.gen(function*() {
      yield* quietDebug
      const pair = ecPair()
      const server = yield* A2AServer.make({
        agent,
        card,
        signing: {
          key: Redacted.make(pair.privateKey.export({ format: "pem", type: "pkcs8" }) as string),
          kid: "k-2026"
        },
        extendedCard: { description: "A signed card, for callers we know" },
        authenticate: Authentication.apiKey({ keys: { alice: Redacted.make(apiKey) } })
      })
      const publicKey = jwkOf(pair.publicKey)
      const first = yield* getCard(server.url, { "A2A-Version": "1.0" })
      const second = yield* getCard(server.url, { "A2A-Version": "1.0" })
      expect(first.body.signatures).toHaveLength(1)
      expect(jose.decodeProtectedHeader(first.body.signatures[0])).toEqual({ alg: "ES256", kid: "k-2026", typ: "JOSE" })
      expect(second.body.signatures).toEqual(first.body.signatures)
      expect(second.etag).toBe(first.etag)
      expect(first.body.capabilities.extendedAgentCard).toBe(true)
      expect(yield* verifyWith(publicKey, first.body)).toEqual({ verified: true, asked: ["k-2026"] })
      // A card changed after signing, or another key, does not verify: the check above could fail.
      expect((yield* verifyWith(publicKey, { ...first.body, description: "changed" })).verified).toBe(false)
      expect((yield* verifyWith(jwkOf(ecPair().publicKey), first.body)).verified).toBe(false)

      const rest = yield* Effect.promise(async () => {
        const response = await fetch(`${server.urls["HTTP+JSON"]}/extendedAgentCard`, {
          headers: { "x-api-key": apiKey, "A2A-Version": "1.0" }
        })
        return await response.json() as Record<string, any>
      })
      const rpc = yield* Effect.promise(async () => {
        const response = await fetch(server.rpcUrl, {
          method: "POST",
          headers: { "content-type": "application/json", "A2A-Version": "1.0", "x-api-key": apiKey },
          body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "GetExtendedAgentCard", params: {} })
        })
        return (await response.json() as { result: Record<string, any> }).result
      })
      for (const extended of [rest, rpc]) {
        expect(extended.description).toBe("A signed card, for callers we know")
        // The transports answer the SDK's JSON form, which leaves out the empty tenant.
        expect(extended.supportedInterfaces).toEqual(
          first.body.supportedInterfaces.map(({ tenant: _, ...rest }: Record<string, unknown>) => rest)
        )
        expect((yield* verifyWith(publicKey, extended)).verified).toBe(true)
        // The SDK's clients decode it into the object form, whose canonical form drops the security schemes:
        // that verifies only in proto JSON again, which covers them.
        expect((yield* verifyWith(publicKey, AgentCard.toJSON(AgentCard.fromJSON(extended)))).verified).toBe(true)
        expect((yield* verifyWith(publicKey, AgentCard.fromJSON(extended))).verified).toBe(false)
        expect((yield* verifyWith(jwkOf(ecPair().publicKey), extended)).verified).toBe(false)
      }
      // Each card is signed in the form it is served in: its security scheme is covered.
      const moved = { apiKey: { apiKeySecurityScheme: { location: "header", name: "X-Other" } } }
      expect(first.body.securitySchemes.apiKey.apiKeySecurityScheme).toMatchObject({ location: "header" })
      expect((yield* verifyWith(publicKey, { ...first.body, securitySchemes: moved })).verified).toBe(false)
      expect((yield* verifyWith(publicKey, { ...rest, securitySchemes: moved })).verified).toBe(false)
      // Signed once: both transports answer the same signature.
      expect(rpc.signatures).toEqual(rest.signatures)
      expect(rest.signatures).not.toEqual(first.body.signatures)
    }))

  it.scopedLive("a security scheme's URL changed in the served card after signing: the SDK's verifier and our client refuse it", () =>
    Effect.gen(function*() {
      yield* quietDebug
      const pair = ecPair()
      const server = yield* A2AServer.make({
        agent,
        card: oauthCard,
        signing: { key: jwkOf(pair.privateKey), kid: "k-oauth" }
      })
      const served = (yield* getCard(server.url, { "A2A-Version": "1.0" })).body
      const publicKey = { ...jwkOf(pair.publicKey), kid: "k-oauth" }
      expect(yield* verifyWith(publicKey, served)).toEqual({ verified: true, asked: ["k-oauth"] })
      // Whatever form the card is served in, the token URL is in it once, and the attacker's replaces it.
      const text = JSON.stringify(served)
      expect(text.split(tokenUrl)).toHaveLength(2)
      const tampered = JSON.parse(text.replace(tokenUrl, "https://attacker.example/token"))
      expect((yield* verifyWith(publicKey, tampered)).verified).toBe(false)
      const middle = yield* servingCard(tampered)
      const refused = yield* Effect.flip(
        RemoteAgent.make({ name: "wary", url: middle.url, trust: { keys: [publicKey] } })
      )
      expect(refused.reason).toBe("InvalidSignature")
      // The untouched card, served by the same middle, is accepted: the refusal above is the token URL's.
      const honest = yield* servingCard(served)
      const trusted = yield* RemoteAgent.make({ name: "trusting", url: honest.url, trust: { keys: [publicKey] } })
      expect(yield* trusted.send("hi")).toMatchObject({ _tag: "Completed" })
    }))

  it.scopedLive("every field served is covered: a change to any of its values, or its removal, fails the SDK's verifier and our client's check", () =>
    Effect.gen(function*() {
      yield* quietDebug
      const pair = ecPair()
      const server = yield* A2AServer.make({
        agent,
        card: everyField,
        signing: { key: jwkOf(pair.privateKey), kid: "k-all" }
      })
      const served = (yield* getCard(server.url, { "A2A-Version": "1.0" })).body as { readonly [key: string]: Json }
      // Every field of the v1.0 card is served, with a value: the table below covers them all.
      expect(Object.keys(served).sort()).toEqual(Object.keys(AgentCard.fromJSON({})).sort())
      const publicKey = { ...jwkOf(pair.publicKey), kid: "k-all" }
      const lookup = yield* Effect.orDie(trust.lookup({ keys: [publicKey] }, fetch))
      const ours = (value: unknown) =>
        Effect.map(
          Effect.either(trust.verify(lookup, true, value, AgentCard.fromJSON(value))),
          (result) => Either.isRight(result) ? "verified" : result.left.reason
        )
      // The table could fail: the card as served verifies with both.
      expect((yield* verifyWith(publicKey, served)).verified).toBe(true)
      expect(yield* ours(served)).toBe("verified")
      const changes = Object.keys(served).filter((key) => key !== "signatures").flatMap((key) => [
        ...leaves(served[key]!, [key]).map((path) => [path.join("."), changedAt(served, path, "x")] as const),
        [`${key} removed`, Object.fromEntries(Object.entries(served).filter(([k]) => k !== key))] as const
      ])
      expect(changes.length).toBeGreaterThan(40)
      for (const [change, value] of changes) {
        expect((yield* verifyWith(publicKey, value)).verified, change).toBe(false)
        expect(yield* ours(value), change).toBe("InvalidSignature")
      }
    }))

  it.scopedLive("the SDK's ClientFactory reads our proto-JSON card on each transport: the security schemes decoded, the agent called", () =>
    Effect.gen(function*() {
      yield* quietDebug
      const pair = ecPair()
      const publicKey = { ...jwkOf(pair.publicKey), kid: "k-read" }
      for (const declared of [oauthCard, card] as ReadonlyArray<A2AServer.CardOptions>) {
        const { server } = yield* serve({ card: declared, signing: { key: jwkOf(pair.privateKey), kid: "k-read" } })
        for (const transport of transports) {
          const label = `${transport}, ${declared.securitySchemes === undefined ? "no schemes" : "schemes"}`
          // The SDK's DefaultAgentCardResolver reads the card, and the factory of one transport is chosen from it.
          const caller = yield* callerOn(server.url, transport, keyOf("a"))
          expect(caller.client.transport.protocolName.toUpperCase(), label).toBe(transport)
          expect(taskOf(yield* caller.send("hello")).status?.state, label).toBe(TaskState.TASK_STATE_COMPLETED)
          const got = yield* settle(() => caller.client.getAgentCard(caller.options))
          if (!("ok" in got)) return yield* Effect.dieMessage(`${label}: ${String(got.error)}`)
          expect(got.ok.securitySchemes ?? {}, label).toEqual(declared.securitySchemes ?? {})
          // What the SDK read verifies, in proto JSON again, with the SDK's verifier.
          expect((yield* verifyWith(publicKey, AgentCard.toJSON(got.ok))).verified, label).toBe(true)
        }
      }
    }))

  it.scopedLive("the SDK's client on each transport gets the extended card and verifies its proto JSON with the SDK's verifier", () =>
    Effect.gen(function*() {
      yield* quietDebug
      const pair = ecPair()
      const { server } = yield* serve({
        signing: { key: jwkOf(pair.privateKey), kid: "k-sdk" },
        extendedCard: { description: "for callers we know" },
        // A scheme in the card: the extended card then differs between its JSON and its decoded form.
        authenticate: Authentication.apiKey({ keys: { a: Redacted.make(keyOf("a")) } })
      })
      const sdkVerifier = (key: jose.JWK) =>
        verifyAgentCardSignature(async (kid) => kid === "k-sdk" ? key : Promise.reject(new Error(kid)))
      // The client hands the verifier the card it decoded; in proto JSON again, its security schemes are in the canonical form.
      const trusting = (key: jose.JWK) => (card: AgentCard) => sdkVerifier(key)(AgentCard.toJSON(card) as AgentCard)
      for (const transport of transports) {
        const caller = yield* callerOn(server.url, transport, keyOf("a"))
        const got = yield* settle(() => caller.client.getAgentCard(caller.options, trusting(jwkOf(pair.publicKey))))
        expect("ok" in got && got.ok.description, transport).toBe("for callers we know")
        expect("ok" in got && Object.keys(got.ok.securitySchemes ?? {}), transport).toEqual(["apiKey"])
        const refused = yield* settle(() =>
          caller.client.getAgentCard(caller.options, trusting(jwkOf(ecPair().publicKey)))
        )
        expect("error" in refused, transport).toBe(true)
        // The decoded card as it is: the SDK's canonical form drops its security schemes, which the signature covers.
        const decoded = yield* settle(() =>
          caller.client.getAgentCard(caller.options, sdkVerifier(jwkOf(pair.publicKey)))
        )
        expect("error" in decoded, transport).toBe(true)
      }
    }))

  it.scopedLive("the v0.3 card carries the signature, its url, preferredTransport and additionalInterfaces the covered interfaces", () =>
    Effect.gen(function*() {
      const pair = ecPair()
      const server = yield* A2AServer.make({ agent, card, signing: { key: jwkOf(pair.privateKey) } })
      const v1 = (yield* getCard(server.url, { "A2A-Version": "1.0" })).body
      const legacy = yield* getCard(server.url)
      const again = yield* getCard(server.url)
      expect(again.etag).toBe(legacy.etag)
      expect(legacy.body.protocolVersion).toBe("0.3")
      expect(legacy.body.signatures).toEqual(v1.signatures)
      // The v0.3 card is as it was, the empty tenant written out; the v1.0 card's proto JSON leaves it out.
      expect(
        legacy.body.supportedInterfaces.map((
          { tenant, ...rest }: Record<string, unknown>
        ) => (expect(tenant).toBe(""), rest))
      )
        .toEqual(v1.supportedInterfaces)
      // What a v0.3 client routes by: the covered interfaces that speak v0.3, the first one first.
      const covered =
        (v1.supportedInterfaces as Array<{ url: string; protocolBinding: string; protocolVersion: string }>)
          .filter((i) => i.protocolVersion === "0.3")
          .map((i) => ({ url: i.url, transport: i.protocolBinding }))
      expect(covered.length).toBeGreaterThan(0)
      expect({ url: legacy.body.url, transport: legacy.body.preferredTransport }).toEqual(covered[0])
      expect(legacy.body.additionalInterfaces ?? []).toEqual(covered.slice(1))
      // Without a kid given, the JWK thumbprint (RFC 7638) of the public key.
      const kid = yield* Effect.promise(() => jose.calculateJwkThumbprint(jwkOf(pair.publicKey)))
      expect(jose.decodeProtectedHeader(v1.signatures[0]).kid).toBe(kid)
      expect((yield* verifyWith(jwkOf(pair.publicKey), v1)).verified).toBe(true)
      // The v0.3 card's canonical form is the v1.0 one here (its v0.3 fields are dropped, its interfaces the same):
      // it verifies. One whose v0.3 form renames a covered field (`capabilities.extendedAgentCard` is
      // `supportsAuthenticatedExtendedCard` there) does not.
      expect((yield* verifyWith(jwkOf(pair.publicKey), legacy.body)).verified).toBe(true)
    }))

  it.scopedLive("a key that does not load fails start-up with ConfigurationError InvalidOption, the key never in the message", () =>
    Effect.gen(function*() {
      const ec = jwkOf(ecPair().privateKey)
      const rsa = generateKeyPairSync("rsa", { modulusLength: 2048 })
      const rsaPem = rsa.privateKey.export({ format: "pem", type: "pkcs8" }) as string
      const cases: ReadonlyArray<readonly [A2AServer.SigningOptions, ReadonlyArray<string>]> = [
        [{ key: Redacted.make("-----BEGIN PRIVATE KEY-----\nc2VjcmV0LXNpZ25pbmcta2V5\n-----END PRIVATE KEY-----") }, [
          "c2VjcmV0LXNpZ25pbmcta2V5"
        ]],
        [{ key: Redacted.make("{\"kty\":\"EC\",\"d\":\"s3cret-d\"") }, ["s3cret-d"]],
        // JSON.parse quotes the text it cannot read.
        [{ key: Redacted.make("{\"d\": s3cret}") }, ["s3cret"]],
        // A public key cannot sign.
        [{ key: jwkOf(ecPair().publicKey) }, []],
        [{ key: { kty: "oct", k: "c3ltbWV0cmljLXNlY3JldA" } }, ["c3ltbWV0cmljLXNlY3JldA"]],
        // Loads, but cannot sign with the algorithm named.
        [{ key: ec, alg: "RS256" }, [ec.d!]],
        [{ key: Redacted.make(rsaPem), alg: "EdDSA" }, [rsaPem.split("\n")[1]!]]
      ]
      for (const [signing, secrets] of cases) {
        const error = yield* Effect.flip(A2AServer.make({ agent, card, signing }))
        expect(error).toMatchObject({
          _tag: "ConfigurationError",
          reason: "InvalidOption",
          message: expect.stringMatching(/^signing: /)
        })
        for (const secret of secrets) expect(error.message).not.toContain(secret)
      }
    }))

  it.scopedLive("keygen writes a key pair; playground --sign-key serves a card that verifies with the public key keygen wrote", () =>
    Effect.gen(function*() {
      yield* quietDebug
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "effect-a2a-keygen-"))
      yield* Effect.addFinalizer(() => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true })))
      const out: Array<string> = []
      const err: Array<string> = []
      const into = (lines: Array<string>) => (...text: ReadonlyArray<unknown>) =>
        Effect.sync(() => lines.push(text.join(" ")))
      const console = yield* Console.consoleWith(Effect.succeed)
      const withOut = Effect.withConsole({ ...console, log: into(out), error: into(err) })
      const run = (args: ReadonlyArray<string>) =>
        Cli.run(["node", "effect-a2a", ...args]).pipe(
          withOut,
          Effect.provide(NodeContext.layer),
          Logger.withMinimumLogLevel(LogLevel.None)
        )

      expect(yield* run(["keygen", "--out", dir])).toBe(0)
      const privateFile = path.join(dir, "card-signing.private.jwk")
      const publicKey = JSON.parse(fs.readFileSync(path.join(dir, "card-signing.public.jwk"), "utf8")) as jose.JWK
      const privateKey = JSON.parse(fs.readFileSync(privateFile, "utf8")) as jose.JWK
      expect(publicKey.d).toBeUndefined()
      expect(fs.statSync(privateFile).mode & 0o077).toBe(0)
      expect(out.join("\n")).toContain(privateFile)
      expect(out.join("\n")).toContain(publicKey.kid)
      expect(out.join("\n")).not.toContain(privateKey.d)
      // An existing key is never replaced.
      expect(yield* run(["keygen", "--out", dir])).toBe(1)
      expect(err.join("\n")).toMatch(/^effect-a2a keygen: EEXIST/)
      expect(JSON.parse(fs.readFileSync(privateFile, "utf8"))).toEqual(privateKey)

      out.length = 0
      yield* Effect.forkScoped(run(["playground", "--port", "0", "--sign-key", privateFile]))
      let url: string | undefined
      for (let i = 0; i < 200 && (url === undefined || !out.some((line) => line.startsWith("card signed"))); i++) {
        url = /^playground listening on (\S+)$/m.exec(out.join("\n"))?.[1]
        yield* Effect.sleep("25 millis")
      }
      if (url === undefined) return yield* Effect.dieMessage("the playground did not start")
      expect(out).toContain(`card signed, kid ${publicKey.kid}`)
      const served = (yield* getCard(url, { "A2A-Version": "1.0" })).body
      expect(yield* verifyWith(publicKey, served)).toEqual({ verified: true, asked: [publicKey.kid] })
      expect((yield* verifyWith(jwkOf(ecPair().publicKey), served)).verified).toBe(false)
    }))

  it.scopedLive("our client, trusting the key, accepts our signed card and calls the agent, behind API keys too; another key is InvalidSignature", () =>
    Effect.gen(function*() {
      const pair = ecPair()
      const other = ecPair()
      for (const authenticate of [undefined, Authentication.apiKey({ keys: { a: Redacted.make(apiKey) } })]) {
        const server = yield* A2AServer.make({
          agent,
          card,
          signing: { key: jwkOf(pair.privateKey), kid: "k1" },
          ...(authenticate === undefined ? {} : { authenticate })
        })
        const trusted = yield* RemoteAgent.make({
          name: "trusting",
          url: server.url,
          trust: { keys: [{ ...jwkOf(pair.publicKey), kid: "k1" }] },
          headers: { "x-api-key": Redacted.make(apiKey) }
        })
        expect(yield* trusted.send("hi")).toMatchObject({ _tag: "Completed" })
        const refused = yield* Effect.flip(
          RemoteAgent.make({
            name: "wary",
            url: server.url,
            trust: { keys: [{ ...jwkOf(other.publicKey), kid: "k1" }] }
          })
        )
        expect(refused.reason).toBe("InvalidSignature")
      }
    }))
})
