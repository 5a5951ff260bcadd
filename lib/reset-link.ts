// Password reset delivery (specification, "Password reset delivery"): every reset link points at
// the web app's /day route with the auth modal and the token; the host comes from web.url.
export function rewritePasswordResetLink (link: string, webUrl: string): string {
  let token: string | null
  try {
    token = new URL(link).searchParams.get('token')
  } catch {
    return link
  }
  if (token === null || token === '') return link
  const target = new URL('/day', new URL(webUrl).origin)
  target.searchParams.set('auth', 'reset')
  target.searchParams.set('token', token)
  return target.toString()
}
