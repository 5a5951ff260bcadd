/** Sign-up fields: a name is short text; an email is bounded by RFC 5321 (4.5.3.1); a password by the session library's rule. */
export const FIELD_LIMITS = {
  name: 100,
  email: 254,
  emailLocalPart: 64,
  password: 100
} as const
