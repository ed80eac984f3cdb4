/**
 * The guard on push targets: a webhook URL a caller registers must not make
 * the server reach into its own network (loopback, private, link-local
 * ranges, the cloud metadata address), unless the operator allowed it.
 *
 * It runs twice. `targetProblem` when a config is saved, for a clear
 * refusal to the caller of what is certainly forbidden; `guardedLookup` at
 * delivery, on the addresses the socket is about to connect to, so that a
 * name which resolved to a public address at creation, or not at all, and to
 * a private one later (DNS rebinding) still gets nowhere. Neither ever opens
 * a connection.
 *
 * @internal
 */
import * as Dns from "node:dns/promises"
import * as Net from "node:net"

/** @internal */
export interface PushPolicy {
  /** Hosts, IP addresses or CIDR blocks (`127.0.0.1`, `::1`, `10.0.0.0/8`, `hooks.internal`) exempt from the guard and from https in production. */
  readonly allow: ReadonlyArray<string>
  /** https required (NODE_ENV=production), except for allowed targets. */
  readonly requireHttps: boolean
}

/** The error code `guardedLookup` refuses with. */
export const refusalCode = "EPUSHTARGET"

/** The option the problem texts point to. */
const option = "allowPushTargets"

// An IPv4 range is also refused in the IPv6 forms that reach it: NAT64 (`64:ff9b::/96`, RFC 6052), which a
// gateway translates to the IPv4 address, and 6to4 (`2002::/16`, RFC 3056), which embeds it.
const translated = (address: string, prefix: number): ReadonlyArray<readonly [string, number]> => {
  const [a = 0, b = 0, c = 0, d = 0] = address.split(".").map(Number)
  const high = ((a << 8) | b).toString(16)
  const low = ((c << 8) | d).toString(16)
  return [[`64:ff9b::${high}:${low}`, 96 + prefix], [`2002:${high}:${low}::`, 16 + prefix]]
}

const block = (ranges: ReadonlyArray<string>): Net.BlockList => {
  const list = new Net.BlockList()
  for (const range of ranges) {
    const [address = "", prefix = ""] = range.split("/")
    if (Net.isIPv6(address)) {
      list.addSubnet(address, Number(prefix), "ipv6")
    } else {
      list.addSubnet(address, Number(prefix), "ipv4")
      for (const [v6, bits] of translated(address, Number(prefix))) list.addSubnet(v6, bits, "ipv6")
    }
  }
  return list
}

// In the order a problem names them. A BlockList matches an IPv4 rule against
// the IPv4-mapped IPv6 form too (`::ffff:127.0.0.1`, `::ffff:7f00:1`).
const refused: ReadonlyArray<readonly [kind: string, ranges: Net.BlockList]> = [
  ["an unspecified", block(["0.0.0.0/8", "::/128"])],
  ["a loopback", block(["127.0.0.0/8", "::1/128"])],
  ["a private", block(["10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10"])],
  ["a link-local", block(["169.254.0.0/16", "fe80::/10"])],
  ["a unique-local", block(["fc00::/7"])],
  ["a multicast", block(["224.0.0.0/4", "ff00::/8"])],
  ["a broadcast or reserved", block(["240.0.0.0/4"])]
]

const familyOf = (address: string): "ipv4" | "ipv6" => Net.isIPv6(address) ? "ipv6" : "ipv4"

/** Why `address` is not a public one, or undefined. */
const kindOf = (address: string): string | undefined =>
  refused.find(([, ranges]) => ranges.check(address, familyOf(address)))?.[0]

const cidr = /^(.+)\/(\d{1,3})$/

/**
 * The entries of an allow list that are neither a host name, an IP address
 * nor a valid CIDR block. They match nothing (the guard fails closed); a
 * server refuses them at start-up.
 *
 * @internal
 */
export const invalidEntries = (allow: ReadonlyArray<string>): ReadonlyArray<string> =>
  allow.filter((entry) => {
    const match = cidr.exec(entry)
    if (match === null) return entry.trim() === "" || /[\s/@]/.test(entry)
    const bits = Number(match[2])
    const family = Net.isIP(match[1] ?? "")
    return family === 0 || bits > (family === 4 ? 32 : 128)
  })

interface Allowed {
  readonly names: ReadonlySet<string>
  readonly addresses: Net.BlockList
}

const normalName = (host: string): string => host.toLowerCase().replace(/\.$/, "")

const compiled = new WeakMap<PushPolicy, Allowed>()

const allowedOf = (policy: PushPolicy): Allowed => {
  const known = compiled.get(policy)
  if (known !== undefined) return known
  const invalid = new Set(invalidEntries(policy.allow))
  const names = new Set<string>()
  const addresses = new Net.BlockList()
  for (const entry of policy.allow) {
    if (invalid.has(entry)) continue
    const match = cidr.exec(entry)
    const [, network = "", bits] = match ?? []
    if (match !== null) addresses.addSubnet(network, Number(bits), familyOf(network))
    else if (Net.isIP(unbracket(entry)) !== 0) addresses.addAddress(unbracket(entry), familyOf(unbracket(entry)))
    else names.add(normalName(entry))
  }
  const allowed = { names, addresses }
  compiled.set(policy, allowed)
  return allowed
}

const unbracket = (host: string): string => host.startsWith("[") && host.endsWith("]") ? host.slice(1, -1) : host

const isAllowedAddress = (allowed: Allowed, address: string): boolean =>
  allowed.addresses.check(address, familyOf(address))

/** Why a connection to `address` (resolved from `host`) is refused, or undefined. */
const addressProblem = (allowed: Allowed, host: string, address: string): string | undefined => {
  if (isAllowedAddress(allowed, address)) return undefined
  const kind = kindOf(address)
  if (kind === undefined) return undefined
  const resolved = host === address ? "" : ` resolves to ${address}, which`
  return `push URL host ${host}${resolved} is ${kind} address; allow it with ${option}`
}

// A resolver that never answers must not hold the create call: past this the name counts as not resolving.
const lookupTimeoutMs = 5_000

const resolveWithin = (host: string, ms: number): Promise<ReadonlyArray<{ readonly address: string }>> => {
  let timer: ReturnType<typeof setTimeout> | undefined
  return Promise.race([
    Dns.lookup(host, { all: true, verbatim: true }),
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer in ${ms} ms`)), ms)
    })
  ]).finally(() => clearTimeout(timer))
}

/**
 * The policy of a server: https is required when `NODE_ENV` is
 * `production`, and `allow` (the `allowPushTargets` option) lists the
 * exceptions.
 *
 * @internal
 */
export const policyOf = (allow: ReadonlyArray<string> | undefined, nodeEnv: string | undefined): PushPolicy => ({
  allow: allow ?? [],
  requireHttps: nodeEnv === "production"
})

/**
 * Why `url` may not be a push target, or undefined. Resolves a name (every
 * address it has): each must be public, or allowed. A name that does not
 * resolve now is not refused: nothing says where it will lead, and the
 * delivery guard checks the addresses it has then (peers register names,
 * such as the TCK's `example.com`, that resolve only where they deliver).
 * Never connects. The text names the host and why, never the path, query
 * or credentials.
 *
 * @internal
 */
export const targetProblem = async (url: string, policy: PushPolicy): Promise<string | undefined> => {
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    return "push URL is not a valid absolute URL"
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") {
    return `push URL scheme ${parsed.protocol} is not http or https`
  }
  if (parsed.username !== "" || parsed.password !== "") {
    return `push URL for host ${parsed.hostname} carries credentials; give them in the config's authentication instead`
  }
  const allowed = allowedOf(policy)
  const host = unbracket(parsed.hostname)
  if (allowed.names.has(normalName(host))) return undefined
  let addresses: ReadonlyArray<string>
  if (Net.isIP(host) !== 0) {
    addresses = [host]
  } else {
    addresses = await resolveWithin(host, lookupTimeoutMs).then(
      (found) => found.map(({ address }) => address),
      () => []
    )
  }
  const exempt = addresses.length > 0 && addresses.every((address) => isAllowedAddress(allowed, address))
  if (policy.requireHttps && parsed.protocol === "http:" && !exempt) {
    return `push URL for host ${host} must use https in production; allow it with ${option}`
  }
  for (const address of addresses) {
    const problem = addressProblem(allowed, host, address)
    if (problem !== undefined) return problem
  }
  return undefined
}

const refusal = (problem: string): NodeJS.ErrnoException => Object.assign(new Error(problem), { code: refusalCode })

/**
 * A `lookup` for `http.request` / `net.connect` that refuses (an error with
 * code `EPUSHTARGET`) a name with any address the policy does not allow: the
 * addresses checked are the ones the socket then connects to.
 *
 * Node calls no `lookup` for an IP literal, which connects as it is: a
 * sender also checks the URL with `targetProblem` before each delivery
 * (a literal needs no DNS, so that costs nothing and cannot be rebound).
 *
 * @internal
 */
export const guardedLookup = (policy: PushPolicy): Net.LookupFunction => (hostname, options, callback) => {
  const allowed = allowedOf(policy)
  const host = unbracket(hostname)
  Dns.lookup(host, { ...options, all: true }).then(
    (found) => {
      if (!allowed.names.has(normalName(host))) {
        for (const { address } of found) {
          const problem = addressProblem(allowed, host, address)
          if (problem !== undefined) return callback(refusal(problem), "")
        }
      }
      if (options.all === true) return callback(null, found)
      const first = found[0]
      return first === undefined
        ? callback(Object.assign(new Error(`push URL host ${host} does not resolve`), { code: "ENOTFOUND" }), "")
        : callback(null, first.address, first.family)
    },
    (error: NodeJS.ErrnoException) => callback(error, "")
  )
}
