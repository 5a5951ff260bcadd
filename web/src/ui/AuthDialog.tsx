// The account dialogs of the `?auth=` entry points: sign in, sign up (name, email, password),
// forgot password (the same answer for every email) and reset (with the token captured earlier).
import { useState } from 'preact/hooks'
import type { AuthDialogKind } from '../lib/auth-params.js'
import { Dialog } from './Dialog.js'
import { sendPasswordReset, signIn, signUp, submitNewPassword, type FormResult } from '../data/session.js'
import { signInButtons, startSignIn } from '../data/provider.js'
import { providerStartFailure } from '../lib/oauth.js'

const TITLES: Record<AuthDialogKind, string> = {
  login: 'Sign in',
  signup: 'Create your account',
  forgot: 'Reset your password',
  reset: 'Choose a new password'
}

export function AuthDialog (props: {
  kind: AuthDialogKind | null
  resetToken: string | null
  onSwitch: (kind: AuthDialogKind | null) => void
  onSignedIn: () => void
}) {
  const { kind } = props
  return (
    <Dialog open={kind !== null} labelledBy='auth-title' onClose={() => props.onSwitch(null)} class='dialog dialog-narrow'>
      {kind !== null && <AuthForm key={kind} {...props} kind={kind} />}
    </Dialog>
  )
}

// The backend's field limits (lib/auth-limits.ts): the browser stops typing there.
const MAX_LENGTH = { name: 100, email: 254, password: 100 }

function Field (props: { id: string, label: string, type: 'text' | 'email' | 'password', autocomplete: string, error: string | undefined, value: string, onInput: (value: string) => void, minLength?: number, maxLength: number }) {
  const errorId = `${props.id}-error`
  return (
    <div class='field'>
      <label for={props.id}>{props.label}</label>
      <input
        id={props.id} name={props.id} type={props.type as 'text'} autocomplete={props.autocomplete} required value={props.value}
        minLength={props.minLength} maxLength={props.maxLength}
        aria-invalid={props.error !== undefined} aria-describedby={props.error !== undefined ? errorId : undefined}
        onInput={(event) => props.onInput((event.currentTarget as HTMLInputElement).value)}
      />
      {props.error !== undefined && <p id={errorId} class='field-error'>{props.error}</p>}
    </div>
  )
}

function AuthForm (props: { kind: AuthDialogKind, resetToken: string | null, onSwitch: (kind: AuthDialogKind | null) => void, onSignedIn: () => void }) {
  const { kind } = props
  const [name, setName] = useState('')
  const [email, setEmail] = useState('')
  const [password, setPassword] = useState('')
  const [busy, setBusy] = useState(false)
  const [result, setResult] = useState<FormResult | null>(null)
  const [done, setDone] = useState<string | null>(null)
  const [providerFailure, setProviderFailure] = useState<string | null>(null)
  const fields = result !== null && !result.ok ? result.fields ?? {} : {}

  async function submit (event: Event) {
    event.preventDefault()
    setBusy(true)
    setResult(null)
    let outcome: FormResult
    if (kind === 'signup') outcome = await signUp({ name, email, password })
    else if (kind === 'login') outcome = await signIn({ email, password })
    else if (kind === 'forgot') outcome = await sendPasswordReset(email)
    else outcome = props.resetToken === null ? { ok: false, message: 'This reset link has no token. Ask for a new one.' } : await submitNewPassword(password, props.resetToken)
    setBusy(false)
    setResult(outcome)
    if (!outcome.ok) return
    if (kind === 'forgot') setDone('If an account exists for that email, a link to reset the password is on its way. Check your inbox.')
    else if (kind === 'reset') setDone('Your password is changed. You can sign in with it now.')
    else props.onSignedIn()
  }

  return (
    <form onSubmit={submit} class='auth-form' noValidate={false}>
      <h2 id='auth-title'>{TITLES[kind]}</h2>
      {done !== null
        ? (
          <>
            <p role='status' class='auth-done'>{done}</p>
            <div class='actions'>
              {kind === 'reset'
                ? <button type='button' class='primary' onClick={() => props.onSwitch('login')}>Sign in</button>
                : <button type='button' class='primary' onClick={() => props.onSwitch(null)}>Close</button>}
            </div>
          </>
          )
        : (
          <>
            {kind === 'forgot' && <p>Enter the email of your account. We will send a link to choose a new password.</p>}
            {kind === 'signup' && <Field id='auth-name' label='Name' type='text' autocomplete='name' value={name} onInput={setName} error={fields.name} maxLength={MAX_LENGTH.name} />}
            {kind !== 'reset' && <Field id='auth-email' label='Email' type='email' autocomplete='email' value={email} onInput={setEmail} error={fields.email} maxLength={MAX_LENGTH.email} />}
            {kind !== 'forgot' && (
              <Field
                id='auth-password' label={kind === 'reset' ? 'New password' : 'Password'} type='password'
                autocomplete={kind === 'login' ? 'current-password' : 'new-password'} value={password} onInput={setPassword} error={fields.password}
                minLength={kind === 'login' ? undefined : 8} maxLength={MAX_LENGTH.password}
              />
            )}
            {result !== null && !result.ok && Object.keys(fields).length === 0 && <p role='alert' class='form-error'>{result.message}</p>}
            <div class='actions'>
              <button type='button' onClick={() => props.onSwitch(null)}>Cancel</button>
              <button type='submit' class='primary' disabled={busy}>
                {kind === 'login' ? 'Sign in' : kind === 'signup' ? 'Create account' : kind === 'forgot' ? 'Send reset link' : 'Save password'}
              </button>
            </div>
            {(kind === 'login' || kind === 'signup') && signInButtons.map((option) => (
              <button
                key={option.provider} type='button' class='provider'
                onClick={() => {
                  setProviderFailure(null)
                  startSignIn(option.provider).catch(() => setProviderFailure(providerStartFailure(option.provider, globalThis.isSecureContext)))
                }}
              >{option.label}
              </button>
            ))}
            {providerFailure !== null && <p role='alert' class='form-error'>{providerFailure}</p>}
            <p class='auth-links'>
              {kind === 'login' && <><button type='button' class='link' onClick={() => props.onSwitch('forgot')}>Forgot your password?</button> · <button type='button' class='link' onClick={() => props.onSwitch('signup')}>Create an account</button></>}
              {kind === 'signup' && <>Have an account? <button type='button' class='link' onClick={() => props.onSwitch('login')}>Sign in</button></>}
              {kind === 'forgot' && <button type='button' class='link' onClick={() => props.onSwitch('login')}>Back to sign in</button>}
            </p>
          </>
          )}
    </form>
  )
}
