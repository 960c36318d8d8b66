import { useState, type ReactNode } from 'react';
import { ApiError, unwrap } from '../api/client.ts';
import type { SessionDto } from '../api/types.ts';
import { Logo } from '../components/layout.tsx';
import { Alert, Button, Field, Form, type FormProps } from '../components/ui.tsx';
import { useApi } from '../context.tsx';
import { useAction, useDocumentTitle } from '../hooks.ts';
import { Link, useLocation } from '../router.tsx';

type OnSignedIn = (session: SessionDto, next: string | null) => void;

/** The sign-in pages' frame around one form: notices above it, a full-width submit button below it. */
function AuthFrame({
  title,
  subtitle,
  notice,
  form: { submitLabel, submitDisabled = false, ...form },
  children,
  footer,
}: {
  title: string;
  subtitle: string;
  notice?: ReactNode;
  form: FormProps & { submitLabel: string; submitDisabled?: boolean };
  children: ReactNode;
  footer: ReactNode;
}) {
  return (
    <div className="auth">
      <aside className="auth-aside" aria-hidden="true">
        <Logo />
        <div className="auth-pitch">
          <p className="auth-pitch-title">Your data, questions and models behind one API.</p>
          <ul className="auth-points">
            <li>Connect CSV, JSON or databases in minutes</li>
            <li>Query with a JSON DSL, get charts and CSV</li>
            <li>Forecast, detect anomalies, train models</li>
            <li>Signed webhooks when anything happens</li>
          </ul>
        </div>
        <p className="auth-foot">REST · Bearer keys · RFC 9457 errors · OpenAPI 3.1</p>
      </aside>
      <main className="auth-main" id="main">
        <div className="auth-card">
          <div className="auth-logo">
            <Logo />
          </div>
          <h1 className="auth-title">{title}</h1>
          <p className="auth-subtitle">{subtitle}</p>
          {notice}
          <Form
            {...form}
            actions={
              <Button type="submit" variant="primary" loading={form.pending} disabled={submitDisabled} className="btn-block">
                {submitLabel}
              </Button>
            }
          >
            {children}
          </Form>
          <p className="auth-switch">{footer}</p>
        </div>
      </main>
    </div>
  );
}

export function PasswordInput(props: { id: string; value: string; onChange: (v: string) => void; autoComplete: string; [aria: string]: unknown }) {
  const { value, onChange, autoComplete, ...rest } = props;
  const [show, setShow] = useState(false);
  return (
    <div className="input-group">
      <input {...rest} className="input" type={show ? 'text' : 'password'} value={value} onChange={(e) => onChange(e.target.value)} autoComplete={autoComplete} />
      <button type="button" className="input-addon" onClick={() => setShow((s) => !s)} aria-pressed={show} aria-label={show ? 'Hide password' : 'Show password'}>
        {show ? 'Hide' : 'Show'}
      </button>
    </div>
  );
}

/** Client-side checks mirror the API's so most mistakes show before a round trip; the API stays the judge. */
export function localError(fields: Record<string, string>): ApiError | null {
  const errors = Object.entries(fields).map(([path, message]) => ({ path, message }));
  return errors.length ? new ApiError({ status: 400, code: 'validation_failed', title: 'Check the highlighted fields', detail: '', errors }) : null;
}

/** The password rule of sign-up, a reset and a change (the API's own check is the one that counts). */
export const passwordRule = (v: string) => (v.length < 10 ? 'Use at least 10 characters' : undefined);

/** A new password and its repetition, checked before anything is sent: field errors by path, or none. */
export function newPasswordProblems(password: string, repeat: string): Record<string, string> {
  const rule = passwordRule(password);
  return { ...(rule ? { newPassword: rule } : {}), ...(repeat !== password ? { repeat: 'The two passwords differ' } : {}) };
}

/** An action's error and how a field clears its part of it (useAction). */
export interface FieldErrors {
  error: ApiError | null;
  fixField: (path: string, stillWrong?: string | null) => void;
}

/**
 * A text field checked as it is typed: `rule` gives its message while the value is wrong, and its error
 * (the form's own or the API's) clears once the value is right.
 */
export function CheckedField({
  label,
  hint,
  path,
  value,
  onChange,
  rule,
  action,
  type = 'text',
  autoComplete,
  autoFocus = false,
}: {
  label: string;
  hint?: string;
  path: string;
  value: string;
  onChange: (v: string) => void;
  rule: (v: string) => string | undefined;
  action: FieldErrors;
  type?: 'text' | 'email' | 'password';
  autoComplete: string;
  autoFocus?: boolean;
}) {
  const change = (v: string) => {
    onChange(v);
    action.fixField(path, rule(v));
  };
  return (
    <Field label={label} hint={hint} error={action.error?.fieldError(path)}>
      {(p) =>
        type === 'password' ? (
          <PasswordInput {...p} value={value} onChange={change} autoComplete={autoComplete} {...(autoFocus ? { autoFocus: true } : {})} />
        ) : (
          <input {...p} className="input" type={type} autoComplete={autoComplete} value={value} onChange={(e) => change(e.target.value)} autoFocus={autoFocus} />
        )
      }
    </Field>
  );
}

/** "New password" and "Repeat the new password", each clearing its error as soon as it is fixed. */
export function NewPasswordFields(props: {
  password: string;
  repeat: string;
  onPassword: (v: string) => void;
  onRepeat: (v: string) => void;
  action: FieldErrors;
  hint: string;
  autoFocus?: boolean;
}) {
  const { password, repeat, action } = props;
  return (
    <>
      <CheckedField
        label="New password"
        hint={props.hint}
        path="newPassword"
        type="password"
        value={password}
        onChange={props.onPassword}
        rule={passwordRule}
        action={action}
        autoComplete="new-password"
        autoFocus={props.autoFocus}
      />
      <CheckedField
        label="Repeat the new password"
        path="repeat"
        type="password"
        value={repeat}
        onChange={props.onRepeat}
        rule={(v) => (v === password ? undefined : 'The two passwords differ')}
        action={action}
        autoComplete="new-password"
      />
    </>
  );
}

/** The sign-up form's own checks, one per field: a message while the value is wrong, else undefined. */
const SIGNUP_RULES = {
  accountName: (v: string) => (!v.trim() ? 'Name your account (your company or project)' : undefined),
  email: (v: string) => (!/^\S+@\S+\.\S+$/.test(v.trim()) ? 'Enter a valid email address' : undefined),
  password: (v: string) => passwordRule(v),
};
const LOGIN_RULES = {
  email: (v: string) => (!v.trim() ? 'Enter your email address' : undefined),
  password: (v: string) => (!v ? 'Enter your password' : undefined),
};

export function LoginPage({ onSignedIn, notice }: { onSignedIn: OnSignedIn; notice?: string | undefined }) {
  useDocumentTitle('Log in');
  const api = useApi();
  const { search } = useLocation();
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const login = useAction(async () => unwrap(api.openapi.POST('/auth/login', { body: { email, password } })));

  const submit = async () => {
    const local = localError({
      ...(LOGIN_RULES.email(email) ? { email: LOGIN_RULES.email(email)! } : {}),
      ...(LOGIN_RULES.password(password) ? { password: LOGIN_RULES.password(password)! } : {}),
    });
    if (local) return login.setError(local);
    const session = await login.run();
    if (session) onSignedIn(session, search.get('next'));
  };

  const err = login.error;
  return (
    <AuthFrame
      title="Log in"
      subtitle="Welcome back. Log in to manage your keys, data and models."
      footer={
        <>
          New here? <Link to={`/signup${search.get('next') ? `?next=${encodeURIComponent(search.get('next')!)}` : ''}`}>Create an account</Link>
        </>
      }
      notice={notice && !err && <Alert tone="info">{notice}</Alert>}
      form={{
        onSubmit: submit,
        pending: login.pending,
        error: err,
        errorTitle: err?.status === 401 ? 'Wrong email or password' : undefined,
        fields: ['email', 'password'],
        submitLabel: 'Log in',
      }}
    >
      <CheckedField label="Email" path="email" type="email" value={email} onChange={setEmail} rule={LOGIN_RULES.email} action={login} autoComplete="email" autoFocus />
      <CheckedField
        label="Password"
        path="password"
        type="password"
        value={password}
        onChange={setPassword}
        rule={LOGIN_RULES.password}
        action={login}
        autoComplete="current-password"
      />
    </AuthFrame>
  );
}

export function SignupPage({ onSignedIn }: { onSignedIn: OnSignedIn }) {
  useDocumentTitle('Create your account');
  const api = useApi();
  const { search } = useLocation();
  const [accountName, setAccountName] = useState('');
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const signup = useAction(async () => unwrap(api.openapi.POST('/auth/signup', { body: { email, password, accountName } })));

  const submit = async () => {
    const values = { accountName, email, password };
    const local = localError(
      Object.fromEntries(
        Object.entries(SIGNUP_RULES)
          .map(([field, rule]) => [field, rule(values[field as keyof typeof values])])
          .filter(([, message]) => message),
      ) as Record<string, string>,
    );
    if (local) return signup.setError(local);
    const session = await signup.run();
    if (session) onSignedIn(session, search.get('next'));
  };

  const err = signup.error;
  return (
    <AuthFrame
      title="Create your account"
      subtitle="Start on the Starter plan: 100 requests per minute, no card needed."
      footer={
        <>
          Already have an account? <Link to="/login">Log in</Link>
        </>
      }
      form={{
        onSubmit: submit,
        pending: signup.pending,
        error: err,
        errorTitle: err?.status === 409 ? 'That email already has an account' : undefined,
        fields: Object.keys(SIGNUP_RULES),
        submitLabel: 'Create account',
      }}
    >
      <CheckedField
        label="Account name"
        hint="Your company or project."
        path="accountName"
        value={accountName}
        onChange={setAccountName}
        rule={SIGNUP_RULES.accountName}
        action={signup}
        autoComplete="organization"
        autoFocus
      />
      <CheckedField label="Work email" path="email" type="email" value={email} onChange={setEmail} rule={SIGNUP_RULES.email} action={signup} autoComplete="email" />
      <CheckedField
        label="Password"
        hint="At least 10 characters. A passphrase of a few words is easy to remember."
        path="password"
        type="password"
        value={password}
        onChange={setPassword}
        rule={SIGNUP_RULES.password}
        action={signup}
        autoComplete="new-password"
      />
    </AuthFrame>
  );
}

/**
 * The page of a reset link an operator printed (`reset-password-link` in the accounts CLI). It works signed in
 * or out; the reset ends every session of the user, so it always ends at the login page.
 */
export function ResetPasswordPage({ onDone }: { onDone: () => void }) {
  useDocumentTitle('Set a new password');
  const api = useApi();
  const { search } = useLocation();
  const token = search.get('token') ?? '';
  const [password, setPassword] = useState('');
  const [repeat, setRepeat] = useState('');
  const reset = useAction(async () => {
    await unwrap(api.openapi.POST('/auth/password-reset', { body: { token, newPassword: password } }));
    return true;
  });

  const submit = async () => {
    const local = localError(newPasswordProblems(password, repeat));
    if (local) return reset.setError(local);
    if (await reset.run()) onDone();
  };

  const err = reset.error;
  const tokenError = err?.fieldError('token');
  return (
    <AuthFrame
      title="Set a new password"
      subtitle="Choose the password you will log in with from now on. This link works once."
      footer={
        <>
          Remembered it? <Link to="/login">Log in</Link>
        </>
      }
      notice={
        <>
          {!token && <Alert tone="error">This link has no token. Ask your operator for a new password reset link.</Alert>}
          {tokenError && (
            <Alert tone="error" title="This link no longer works">
              It is unknown, expired (links last an hour) or already used. Ask your operator for a new one.
            </Alert>
          )}
        </>
      }
      form={{ onSubmit: submit, pending: reset.pending, error: err, fields: ['token', 'newPassword', 'repeat'], submitLabel: 'Set new password', submitDisabled: !token }}
    >
      <NewPasswordFields
        password={password}
        repeat={repeat}
        onPassword={setPassword}
        onRepeat={setRepeat}
        action={reset}
        hint="At least 10 characters. A passphrase of a few words is easy to remember."
        autoFocus
      />
    </AuthFrame>
  );
}
