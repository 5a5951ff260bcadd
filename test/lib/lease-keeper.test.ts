import { test } from 'tap'
import { keepLease } from '../../lib/lease-keeper.js'
import { waitUntil } from '../processes.js'

test('a held lease is renewed every third of its length for as long as the work lasts, and not after the end', async (t) => {
  let renewals = 0
  const lease = keepLease({ leaseMs: 30, renew: async () => { renewals += 1; return true }, onRenewalError: (error) => { throw error } })
  await waitUntil(() => renewals >= 4, 'four renewals', 5000)
  t.equal(lease.lost, false, 'still held')
  await lease.end()
  const atEnd = renewals
  await new Promise((resolve) => setTimeout(resolve, 80))
  t.equal(renewals, atEnd, 'no renewal after the end')
})

test('a renewal that finds the lease taken over marks it lost', async (t) => {
  let answers = [true, false]
  const lease = keepLease({ leaseMs: 30, renew: async () => answers.shift() ?? false, onRenewalError: (error) => { throw error } })
  await waitUntil(() => lease.lost, 'the lease lost', 5000)
  t.equal(answers.length, 0, 'lost at the renewal that answered false, after one that held')
  answers = []
  await lease.end()
})

test('a failed renewal is reported and the next one still comes', async (t) => {
  const failures: unknown[] = []
  let calls = 0
  const lease = keepLease({
    leaseMs: 30,
    renew: async () => {
      calls += 1
      if (calls === 1) throw new Error('database timed out')
      return true
    },
    onRenewalError: (error) => failures.push(error)
  })
  await waitUntil(() => calls >= 3, 'three renewals', 5000)
  await lease.end()
  t.equal(failures.length, 1, 'the failure reported once')
  t.match(failures[0], { message: 'database timed out' })
  t.equal(lease.lost, false, 'a failure is not a loss')
})

test('ending waits for a renewal under way, so it cannot land after the holder let go', async (t) => {
  let finishRenewal = () => {}
  let started = false
  let finished = false
  const lease = keepLease({
    leaseMs: 30,
    renew: async () => {
      if (started) return true
      started = true
      await new Promise<void>((resolve) => { finishRenewal = resolve })
      finished = true
      return true
    },
    onRenewalError: (error) => { throw error }
  })
  await waitUntil(() => started, 'a renewal under way', 5000)
  let ended = false
  const ending = lease.end().then(() => { ended = true })
  await new Promise((resolve) => setTimeout(resolve, 30))
  t.equal(ended, false, 'end waits while the renewal is under way')
  finishRenewal()
  await ending
  t.equal(finished, true, 'ended only after the renewal did')
})
