/**
 * What importing the package costs an Effect application that calls agents,
 * in an install without the optional packages (`scripts/leanInstall.mjs`):
 * the cold start of a fresh `node` process that imports the modules such an
 * application loads anyway (`effect/Effect`, `effect/Schema`,
 * `@effect/platform/HttpClient`, `@a2a-js/sdk/client`), against the same
 * plus the client's module (`effect-a2a/RemoteAgent`), or plus the index
 * (`effect-a2a`), which every example imports. The three alternate, in a new
 * order each round; and the modules each loads, counted once.
 *
 *   npx tsx bench/import-cost.ts
 */
import { spawnSync } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { leanInstall } from "../scripts/leanInstall.mjs"
import { median, report } from "./report.js"

const rounds = Number(process.env.BENCH_ROUNDS ?? 15)
const recorder = join(import.meta.dirname, "..", "scripts", "recordModules.mjs")

const baseline = ["effect/Effect", "effect/Schema", "@effect/platform/HttpClient", "@a2a-js/sdk/client"]
const programs = {
  baseline,
  client: [...baseline, "effect-a2a/RemoteAgent"],
  index: [...baseline, "effect-a2a"]
} as const
type Which = keyof typeof programs

const source = (which: Which) =>
  `${programs[which].map((specifier) => `await import(${JSON.stringify(specifier)})`).join("\n")}
const cpu = process.cpuUsage()
console.log(JSON.stringify({ cpu: (cpu.user + cpu.system) / 1000 }))`

/** One cold start: wall time from spawn to exit, and the process's own CPU time, in ms. */
const coldStart = (app: string, which: Which) => {
  const start = performance.now()
  const child = spawnSync(process.execPath, ["--input-type=module", "-e", source(which)], {
    cwd: app,
    encoding: "utf8"
  })
  const wall = performance.now() - start
  if (child.status !== 0) throw new Error(`importing the ${which} modules failed: ${child.stderr}`)
  return { wall, cpu: (JSON.parse(child.stdout.trim().split("\n").at(-1)!) as { cpu: number }).cpu }
}

const modulesLoaded = (app: string, which: Which): number => {
  const dir = mkdtempSync(join(tmpdir(), "effect-a2a-modules-"))
  try {
    const file = join(dir, "modules.txt")
    const child = spawnSync(process.execPath, ["--import", recorder, "--input-type=module", "-e", source(which)], {
      cwd: app,
      encoding: "utf8",
      env: { ...process.env, RECORD_MODULES: file }
    })
    if (child.status !== 0) throw new Error(`importing the ${which} modules failed: ${child.stderr}`)
    return new Set(readFileSync(file, "utf8").trim().split("\n")).size
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

const install = leanInstall()
try {
  const wall: Record<Which, Array<number>> = { baseline: [], client: [], index: [] }
  const cpu: Record<Which, Array<number>> = { baseline: [], client: [], index: [] }
  const order: Array<Which> = ["baseline", "client", "index"]
  // One round first, not counted: the files come into the OS's cache.
  for (const which of order) coldStart(install.app, which)
  for (let round = 0; round < rounds; round++) {
    order.push(order.shift()!)
    for (const which of round % 2 === 0 ? order : [...order].reverse()) {
      const sample = coldStart(install.app, which)
      wall[which].push(sample.wall)
      cpu[which].push(sample.cpu)
    }
  }
  const modules = {
    baseline: modulesLoaded(install.app, "baseline"),
    client: modulesLoaded(install.app, "client"),
    index: modulesLoaded(install.app, "index")
  }
  const row = (which: "client" | "index", label: string, target: number) => {
    const ours = median(wall[which])
    const peer = median(wall.baseline)
    return [
      {
        name: `${label} vs the baseline: cold start, median of ${rounds} processes`,
        ours,
        peer,
        unit: "ms",
        target: `<= ${target}`,
        pass: ours / peer <= target
      },
      {
        name: `${label} vs the baseline: CPU time of the process, median`,
        ours: median(cpu[which]),
        peer: median(cpu.baseline),
        unit: "ms",
        target: "informative",
        pass: true
      },
      {
        name: `${label} vs the baseline: modules loaded`,
        ours: modules[which],
        peer: modules.baseline,
        unit: "",
        target: "informative",
        pass: true
      }
    ]
  }
  report("import-cost", [
    ...row("client", "+ effect-a2a/RemoteAgent", 1.2),
    ...row("index", "+ effect-a2a (the index)", 1.3)
  ])
  console.log(`\nbaseline: ${baseline.join(", ")}; installed beside the package: ${install.packages.join(", ")}`)
} finally {
  install.remove()
}
