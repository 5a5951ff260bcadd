// package.json's `engines` tells the truth: every Node it admits is one that every installed package
// admits too (so `npm ci` has no engine to warn about on any of them), and this Node is one of them.
import { readFile } from 'node:fs/promises'
import { test } from 'tap'
import semver from 'semver'

const root = new URL('../../', import.meta.url)

interface LockedPackage { version?: string, engines?: { node?: string } | string[], optional?: boolean }

test('every Node that engines admits is admitted by every locked package, and this Node is admitted', async (t) => {
  const manifest = JSON.parse(await readFile(new URL('package.json', root), 'utf8')) as { engines: { node: string } }
  const lock = JSON.parse(await readFile(new URL('package-lock.json', root), 'utf8')) as { packages: Record<string, LockedPackage> }
  const ours = manifest.engines.node
  t.ok(semver.validRange(ours), `engines.node (${ours}) is a range`)
  t.ok(semver.satisfies(process.version, ours), `this Node (${process.version}) is within engines.node`)

  const narrower: string[] = []
  for (const [path, locked] of Object.entries(lock.packages)) {
    // Old packages wrote engines as an array; npm ignores that form. Optional ones are skipped, not warned about.
    const theirs = Array.isArray(locked.engines) ? undefined : locked.engines?.node
    if (path === '' || theirs === undefined || locked.optional === true) continue
    if (!semver.subset(ours, theirs)) narrower.push(`${path.replace(/^.*node_modules\//, '')}@${locked.version ?? '?'} wants ${theirs}`)
  }
  t.same(narrower, [], 'no installed package asks for a Node that engines.node leaves out')
})
