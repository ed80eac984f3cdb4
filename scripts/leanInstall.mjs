// An application that installed the package and only what it requires: the packed package, and its dependencies and
// non-optional peer dependencies, read from package.json at run time, linked from this checkout's node_modules. No
// optional peer is there, so an import of one by the package fails as it would in such an install.
//
//   node scripts/leanInstall.mjs   builds, packs and prints the application's folder (the caller removes it)
import { execFileSync } from "node:child_process"
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { pathToFileURL } from "node:url"

const defaultRoot = resolve(import.meta.dirname, "..")

/** The packages an install of the package at `root` brings: its dependencies and its peers not marked optional. */
export const requiredPackages = (root = defaultRoot) => {
  const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8"))
  const optional = pkg.peerDependenciesMeta ?? {}
  return [
    ...Object.keys(pkg.dependencies ?? {}),
    ...Object.keys(pkg.peerDependencies ?? {}).filter((name) => optional[name]?.optional !== true)
  ].sort()
}

/**
 * Builds the package (unless `build` is false, for a `dist` already built), packs it and installs the tarball into a
 * fresh folder with only the required packages beside it. Returns the folder (an ESM application: run `node` there),
 * the packages linked, the tarball's name, `link`, which links one more package of this checkout, and `remove`,
 * which deletes the folder.
 */
export const leanInstall = ({ build = true, root = defaultRoot } = {}) => {
  const run = (cmd, args, cwd) =>
    execFileSync(cmd, args, { cwd, stdio: ["ignore", "pipe", "inherit"], encoding: "utf8" })
  const app = mkdtempSync(join(tmpdir(), "effect-a2a-lean-"))
  const remove = () => rmSync(app, { recursive: true, force: true })
  try {
    if (build) run("npm", ["run", "--silent", "build"], root)
    const tarball = run("npm", ["pack", "--silent", "--pack-destination", app], root).trim().split("\n").at(-1)
    const modules = join(app, "node_modules")
    mkdirSync(join(modules, "effect-a2a"), { recursive: true })
    run("tar", ["-xzf", join(app, tarball), "-C", join(modules, "effect-a2a"), "--strip-components=1"], app)
    rmSync(join(app, tarball))
    const packages = requiredPackages(root)
    const link = (name) => {
      mkdirSync(join(modules, name, ".."), { recursive: true })
      symlinkSync(join(root, "node_modules", name), join(modules, name), "dir")
    }
    for (const name of packages) link(name)
    writeFileSync(join(app, "package.json"), JSON.stringify({ name: "lean-app", type: "module", private: true }))
    return { app, packages, tarball, link, remove }
  } catch (error) {
    remove()
    throw error
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) console.log(leanInstall().app)
