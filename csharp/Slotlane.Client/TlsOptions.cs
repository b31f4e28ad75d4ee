using System;
using System.Collections.Generic;
using System.Runtime.InteropServices;
using System.Security.Cryptography;
using System.Security.Cryptography.X509Certificates;
using System.Text;

namespace Slotlane
{
    /// <summary>What the server's certificate is verified for (<c>sl_tls_verify</c>).</summary>
    public enum TlsVerify
    {
        /// <summary>The chain to a trusted CA and the host name (the default).</summary>
        Full = 0,
        /// <summary>The chain only: a certificate of a trusted CA for any name.</summary>
        Chain = 1,
        /// <summary>Nothing: whoever is on the path can read and change the traffic. For tests only.</summary>
        NoneInsecure = 2,
    }

    /// <summary>What the certificates of nodes learned from a cluster's topology (not the seeds) are verified
    /// against (<c>sl_tls_node_names</c>).</summary>
    public enum TlsNodeNames
    {
        /// <summary>The address the cluster announced the node by, IP or host name (an IP is matched against the
        /// certificate's IP SANs). The default.</summary>
        Address = 0,
        /// <summary>The host name the node announces (Redis 7 <c>cluster-announce-hostname</c>), else its address.</summary>
        Hostname = 1,
        /// <summary><see cref="TlsOptions.ServerName"/> for every node: one certificate for the whole cluster.</summary>
        ServerName = 2,
        /// <summary>The chain only (the seeds are still verified by name).</summary>
        ChainOnly = 3,
    }

    /// <summary>TLS for every connection of a client (seeds, discovered nodes, reconnects), done by the core with
    /// OpenSSL 3: <see cref="ClientOptions.Tls"/>. A <c>rediss://</c> URL without it uses the system's CAs and full
    /// verification. The handshake runs within <see cref="ClientOptions.ConnectTimeout"/> and nothing is sent before
    /// the server's certificate is verified. Failures raise <see cref="SlotlaneTlsException"/> saying what failed
    /// ("certificate verify failed: ...", "host name mismatch: expected X, ...").
    /// <para>Trusted CAs: any of <see cref="CaFile"/>, <see cref="CaDirectory"/>, <see cref="CaPem"/> and
    /// <see cref="CaCertificates"/>, and the system's store when <see cref="SystemRoots"/> says so (by default only
    /// when none is given). A client certificate (mutual TLS): <see cref="CertificateFile"/> with
    /// <see cref="KeyFile"/>, <see cref="CertificatePem"/> with <see cref="KeyPem"/>, or <see cref="ClientCertificate"/>.
    /// An <c>SslStream</c>'s callbacks cannot be used: the handshake is OpenSSL's, on the core's threads.</para></summary>
    public sealed class TlsOptions
    {
        /// <summary>A PEM file of trusted CAs.</summary>
        public string CaFile { get; set; }
        /// <summary>A directory of hashed CA certificates (<c>c_rehash</c> form).</summary>
        public string CaDirectory { get; set; }
        /// <summary>Trusted CAs as PEM text.</summary>
        public string CaPem { get; set; }
        /// <summary>Trusted CAs as certificates (their public part is used).</summary>
        public X509Certificate2Collection CaCertificates { get; set; }
        /// <summary>Trust the system's store too (true), never (false), or only when no CA is given (null, the default).</summary>
        public bool? SystemRoots { get; set; }
        /// <summary>The client certificate chain, a PEM file (the leaf first).</summary>
        public string CertificateFile { get; set; }
        /// <summary>Its private key, an unencrypted PEM file.</summary>
        public string KeyFile { get; set; }
        /// <summary>The client certificate chain as PEM text.</summary>
        public string CertificatePem { get; set; }
        /// <summary>Its private key as unencrypted PEM text.</summary>
        public string KeyPem { get; set; }
        /// <summary>The client certificate with its private key (loaded with <c>X509KeyStorageFlags.Exportable</c>):
        /// the key is handed to OpenSSL as PEM. On .NET (Core 3+) any key the runtime exports as PKCS#8; on Mono, RSA
        /// keys only (Mono cannot export others: give PEM then).</summary>
        public X509Certificate2 ClientCertificate { get; set; }
        /// <summary>What the server's certificate is verified for; default <see cref="TlsVerify.Full"/>.</summary>
        public TlsVerify Verify { get; set; } = TlsVerify.Full;
        /// <summary>The name the seeds' certificates are verified against and sent as SNI, instead of their address.</summary>
        public string ServerName { get; set; }
        /// <summary>What discovered cluster nodes are verified against; default <see cref="TlsNodeNames.Address"/>.</summary>
        public TlsNodeNames NodeNames { get; set; } = TlsNodeNames.Address;

        /// <summary>Whether the native library was built with TLS (OpenSSL); without it TLS options and
        /// <c>rediss://</c> fail with <see cref="SlotlaneResourceException"/>.</summary>
        public static bool Supported { get { return Native.sl_tls_supported() == 1; } }

        /// <summary>Returns a copy (the certificate objects are shared).</summary>
        /// <returns>A new options object with the same values.</returns>
        public TlsOptions Clone() { return (TlsOptions)MemberwiseClone(); }

        internal void Validate()
        {
            if (!Enum.IsDefined(typeof(TlsVerify), Verify)) throw new ArgumentOutOfRangeException("options", Verify, "TlsOptions.Verify is not a TlsVerify");
            if (!Enum.IsDefined(typeof(TlsNodeNames), NodeNames)) throw new ArgumentOutOfRangeException("options", NodeNames, "TlsOptions.NodeNames is not a TlsNodeNames");
            int certs = (CertificateFile != null ? 1 : 0) + (CertificatePem != null ? 1 : 0) + (ClientCertificate != null ? 1 : 0);
            if (certs > 1) throw new ArgumentException("give one of TlsOptions.CertificateFile, CertificatePem and ClientCertificate", "options");
            if ((KeyFile != null || KeyPem != null) && (CertificateFile == null && CertificatePem == null))
                throw new ArgumentException("TlsOptions.KeyFile/KeyPem need CertificateFile/CertificatePem", "options");
            if (KeyFile != null && KeyPem != null) throw new ArgumentException("give one of TlsOptions.KeyFile and KeyPem", "options");
            if (ClientCertificate != null && !ClientCertificate.HasPrivateKey)
                throw new ArgumentException("TlsOptions.ClientCertificate has no private key", "options");
            foreach (string s in new[] { CaFile, CaDirectory, CaPem, CertificateFile, KeyFile, CertificatePem, KeyPem, ServerName })
                if (s != null && s.IndexOf('\0') >= 0) throw new ArgumentException("a TlsOptions string contains a NUL character", "options");
        }

        /// <summary>Makes the core's configuration (the files and keys are loaded now: a bad one fails here).</summary>
        internal unsafe TlsConfig Build()
        {
            string caPem = CaPem;
            if (CaCertificates != null && CaCertificates.Count > 0)
            {
                var sb = new StringBuilder(caPem ?? "");
                if (sb.Length > 0 && sb[sb.Length - 1] != '\n') sb.Append('\n');
                foreach (X509Certificate2 c in CaCertificates) sb.Append(Pem("CERTIFICATE", c.Export(X509ContentType.Cert)));
                caPem = sb.ToString();
            }
            string certPem = CertificatePem, keyPem = KeyPem;
            if (ClientCertificate != null)
            {
                certPem = Pem("CERTIFICATE", ClientCertificate.Export(X509ContentType.Cert));
                keyPem = PrivateKeyPem(ClientCertificate);
            }
            var strings = new List<IntPtr>();
            Func<string, IntPtr> z = s =>
            {
                IntPtr p = ClientOptions.Utf8Z(s);
                if (p != IntPtr.Zero) strings.Add(p);
                return p;
            };
            try
            {
                SlTlsOptions o;
                int rc = Native.sl_tls_options_init(&o, Native.SL_TLS_OPTIONS_VERSION);
                if (rc != 0) throw Errors.FromCode(rc, "sl_tls_options_init failed");
                o.ca_file = z(CaFile);
                o.ca_dir = z(CaDirectory);
                o.ca_pem = z(caPem);
                o.system_roots = SystemRoots.HasValue ? (SystemRoots.Value ? 1 : 0) : -1;
                o.cert_file = z(CertificateFile);
                o.key_file = z(KeyFile ?? (CertificateFile != null && KeyPem == null ? CertificateFile : null)); // the key may sit in the certificate's file
                o.cert_pem = z(certPem);
                o.key_pem = z(keyPem ?? (CertificatePem != null && KeyFile == null ? CertificatePem : null));
                o.verify = (int)Verify;
                o.server_name = z(ServerName);
                o.node_names = (int)NodeNames;
                byte* err = stackalloc byte[512];
                err[0] = 0;
                IntPtr t;
                rc = Native.sl_tls_new(&t, &o, err, (UIntPtr)512);
                if (rc != 0) throw Errors.FromCode(rc, Native.PtrToUtf8((IntPtr)err));
                return new TlsConfig(t);
            }
            finally
            {
                foreach (IntPtr p in strings) Marshal.FreeHGlobal(p);
            }
        }

        internal static string Pem(string label, byte[] der)
        {
            string b64 = Convert.ToBase64String(der);
            var sb = new StringBuilder("-----BEGIN " + label + "-----\n");
            for (int i = 0; i < b64.Length; i += 64) sb.Append(b64, i, Math.Min(64, b64.Length - i)).Append('\n');
            return sb.Append("-----END " + label + "-----\n").ToString();
        }

        /// <summary>The certificate's private key as PEM: PKCS#8 where the runtime exports it (.NET Core 3+), else
        /// (Mono) an RSA key's parameters written as PKCS#1.</summary>
        private static string PrivateKeyPem(X509Certificate2 c)
        {
            AsymmetricAlgorithm key;
            try { key = (AsymmetricAlgorithm)c.GetRSAPrivateKey() ?? c.GetECDsaPrivateKey(); }
            catch (Exception e) when (e is PlatformNotSupportedException || e is NotImplementedException || e is CryptographicException)
            {
                throw new ArgumentException("TlsOptions.ClientCertificate: this runtime cannot read the certificate's private key (" +
                                            e.Message + "); give CertificatePem/KeyPem or files instead", "options", e);
            }
            if (key == null) throw new ArgumentException("TlsOptions.ClientCertificate: its private key is neither RSA nor ECDSA", "options");
            try
            {
                return Pem("PRIVATE KEY", key.ExportPkcs8PrivateKey());
            }
            catch (Exception e) when (e is PlatformNotSupportedException || e is NotImplementedException || e is CryptographicException)
            {
                var rsa = key as RSA;
                if (rsa == null)
                    throw new ArgumentException("TlsOptions.ClientCertificate: this runtime cannot export the certificate's " +
                                                "private key (" + e.Message + "); give CertificatePem/KeyPem or files instead", "options", e);
                RSAParameters p;
                try { p = rsa.ExportParameters(true); }
                catch (CryptographicException x)
                {
                    throw new ArgumentException("TlsOptions.ClientCertificate: its private key is not exportable (load it with " +
                                                "X509KeyStorageFlags.Exportable, or give PEM)", "options", x);
                }
                return Pem("RSA PRIVATE KEY", Pkcs1(p));
            }
        }

        // RSAPrivateKey ::= SEQUENCE { version 0, n, e, d, p, q, dp, dq, qinv } (RFC 8017), DER
        private static byte[] Pkcs1(RSAParameters p)
        {
            var body = new List<byte>();
            foreach (byte[] v in new[] { new byte[] { 0 }, p.Modulus, p.Exponent, p.D, p.P, p.Q, p.DP, p.DQ, p.InverseQ })
            {
                int skip = 0;
                while (skip < v.Length - 1 && v[skip] == 0) skip++;
                bool pad = (v[skip] & 0x80) != 0;
                body.Add(0x02);
                DerLength(body, v.Length - skip + (pad ? 1 : 0));
                if (pad) body.Add(0);
                for (int i = skip; i < v.Length; i++) body.Add(v[i]);
            }
            var seq = new List<byte> { 0x30 };
            DerLength(seq, body.Count);
            seq.AddRange(body);
            return seq.ToArray();
        }

        private static void DerLength(List<byte> b, int n)
        {
            if (n < 0x80) { b.Add((byte)n); return; }
            var bytes = new List<byte>();
            for (; n > 0; n >>= 8) bytes.Insert(0, (byte)n);
            b.Add((byte)(0x80 | bytes.Count));
            b.AddRange(bytes);
        }
    }

    /// <summary>The core's TLS configuration (<c>sl_tls</c>), made once per client and shared by all its core
    /// handles (each <c>sl_client</c> takes its own reference). Released by the finalizer once nothing can
    /// make another handle with it (a handle may still be being made while the client is disposed).</summary>
    internal sealed class TlsConfig
    {
        internal readonly IntPtr Ptr;

        internal TlsConfig(IntPtr p) { Ptr = p; }

        ~TlsConfig() { Native.sl_tls_free(Ptr); }
    }
}
