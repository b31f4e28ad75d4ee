/* slotlane.i — the SWIG interface of libslotlane for the Java binding (and, later, C#).
 *
 * The declarations are not copied: SWIG reads core/include/slotlane.h itself (%include
 * below), so they cannot drift from the header. What this file adds:
 *
 *  - The flat batch ABI with addresses: every buffer, out-parameter and opaque handle is
 *    passed as a pointer-sized integer (Java `long`). A binding keeps its buffers in memory
 *    it owns outside the managed heap (Java: direct ByteBuffers whose addresses it caches)
 *    and reads the 24-byte reply records itself. No array typemap is used on any call: the
 *    stock byte[] typemaps copy whole arrays in and out (365 ns to 5 µs a call measured,
 *    shared/notes/binding-crossings.md), and JNI critical arrays must not be held across
 *    the network wait of sl_batch_run.
 *  - sl_client_options as a proxy class (set once per client; not on the hot path), its
 *    string fields copied on assignment and freed with the object.
 *  - Compile-time checks of the struct layouts the bindings mirror (sl_reply, sl_sizes,
 *    sl_route, sl_stats), and their sizes as constants a binding can verify at load time.
 *
 * The language sections (#ifdef SWIGJAVA ...) hold only typemaps; a C# section would map the
 * same address types to IntPtr (ctype void*, imtype/cstype System.IntPtr).
 *
 * The Java build (java/build-native.sh) also fails when a function of the header is not
 * wrapped or a pointer type of the header has no address typemap (a SWIGTYPE_p_ class
 * appears), so a change of the header that needs a change here cannot go unnoticed.
 */
%module slotlane

%{
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "slotlane.h"
#include "slotlane_uv.h"

/* The layouts the bindings read and write in their own memory. A change of the header
 * that moves a field fails the native build here, before a binding misreads it. */
_Static_assert(sizeof(sl_reply) == 24, "sl_reply is 24 bytes");
_Static_assert(offsetof(sl_reply, type) == 0 && offsetof(sl_reply, flags) == 1 &&
               offsetof(sl_reply, reserved) == 2 && offsetof(sl_reply, len) == 4 &&
               offsetof(sl_reply, value) == 8 && offsetof(sl_reply, offset) == 16,
               "sl_reply layout");
_Static_assert(sizeof(sl_sizes) == 32 && offsetof(sl_sizes, records) == 0 &&
               offsetof(sl_sizes, data) == 8 && offsetof(sl_sizes, commands) == 16 &&
               offsetof(sl_sizes, errors) == 24, "sl_sizes layout");
_Static_assert(offsetof(sl_route, version) == 0 && offsetof(sl_route, size) == 4 &&
               offsetof(sl_route, kind) == 8 && offsetof(sl_route, slot) == 12 &&
               offsetof(sl_route, node) == 16 && sizeof(sl_route) == 16 + sizeof(void *),
               "sl_route layout");
_Static_assert(sizeof(sl_stats) == 136 && offsetof(sl_stats, version) == 0 &&
               offsetof(sl_stats, size) == 4 && offsetof(sl_stats, commands) == 8 &&
               offsetof(sl_stats, moved) == 16 && offsetof(sl_stats, ask) == 24 &&
               offsetof(sl_stats, tryagain) == 32 && offsetof(sl_stats, refreshes) == 40 &&
               offsetof(sl_stats, connects) == 48 && offsetof(sl_stats, reconnects) == 56 &&
               offsetof(sl_stats, bytes_written) == 64 && offsetof(sl_stats, bytes_read) == 72 &&
               offsetof(sl_stats, nodes) == 80, "sl_stats layout");
_Static_assert(sizeof(sl_completion) == 56 && offsetof(sl_completion, batch) == 0 &&
               offsetof(sl_completion, token) == 8 && offsetof(sl_completion, status) == 16 &&
               offsetof(sl_completion, sizes) == 24, "sl_completion layout");
_Static_assert(sizeof(sl_message) == 32 && offsetof(sl_message, kind) == 0 &&
               offsetof(sl_message, flags) == 1 && offsetof(sl_message, channel_len) == 4 &&
               offsetof(sl_message, pattern_len) == 8 && offsetof(sl_message, payload_len) == 12 &&
               offsetof(sl_message, count) == 16 && offsetof(sl_message, offset) == 24,
               "sl_message layout (Subscriber.java decodes it)");
_Static_assert(sizeof(sl_subscriber_options) == 24 && offsetof(sl_subscriber_options, size) == 4 &&
               offsetof(sl_subscriber_options, max_queue_bytes) == 8 &&
               offsetof(sl_subscriber_options, health_check_interval_ms) == 16,
               "sl_subscriber_options layout (Subscriber.java writes it)");
_Static_assert(sizeof(sl_subscriber_stats) == 80 && offsetof(sl_subscriber_stats, messages) == 8 &&
               offsetof(sl_subscriber_stats, bytes_read) == 72,
               "sl_subscriber_stats layout (Subscriber.java reads it)");
%}

%include <stdint.i>

/* ------------------------------------------------------------ address typemaps */

#ifdef SWIGJAVA
/* A pointer passed as a Java long: (jlong) -> (T)(intptr_t), and back for returned pointers. */
%define SL_ADDRESS(TYPE)
%typemap(jni) TYPE "jlong"
%typemap(jtype) TYPE "long"
%typemap(jstype) TYPE "long"
%typemap(javain) TYPE "$javainput"
%typemap(javaout) TYPE { return $jnicall; }
%typemap(in) TYPE %{ $1 = ($1_ltype)(intptr_t)$input; %}
%typemap(out) TYPE %{ $result = (jlong)(intptr_t)$1; %}
%typemap(freearg) TYPE ""
%typemap(argout) TYPE ""
%enddef

/* buffers */
SL_ADDRESS(void *)
SL_ADDRESS(const void *)
SL_ADDRESS(char *errmsg)
/* opaque handles and their out-parameters */
SL_ADDRESS(sl_client *)
SL_ADDRESS(const sl_client *)
SL_ADDRESS(sl_client **)
SL_ADDRESS(sl_batch *)
SL_ADDRESS(const sl_batch *)
SL_ADDRESS(sl_batch **)
SL_ADDRESS(sl_scan *)
SL_ADDRESS(sl_scan **)
SL_ADDRESS(const sl_scan *)
SL_ADDRESS(sl_session *)
SL_ADDRESS(sl_session **)
SL_ADDRESS(const sl_session *)
SL_ADDRESS(sl_tls *)        /* TLS: the configuration handle (sl_tls_options is a proxy class) */
SL_ADDRESS(sl_tls **)
/* the loop thread, completion queues and the completions drained into the binding's memory */
SL_ADDRESS(sl_loop *)
SL_ADDRESS(sl_loop **)
SL_ADDRESS(sl_cq *)
SL_ADDRESS(const sl_cq *)
SL_ADDRESS(sl_cq **)
SL_ADDRESS(sl_completion *)
/* structs the binding lays out in its own memory (layouts checked above) */
SL_ADDRESS(sl_sizes *)
SL_ADDRESS(sl_stats *)
SL_ADDRESS(const sl_stats *)
SL_ADDRESS(const sl_route *)
SL_ADDRESS(const sl_reply *)
SL_ADDRESS(const sl_reply **)
/* argv and out-parameters of the argv and pointer-returning calls */
SL_ADDRESS(const char *const *argv)
SL_ADDRESS(const size_t *)
SL_ADDRESS(size_t *)
SL_ADDRESS(const uint8_t **)
/* the node list (read from its memory by the binding) and the scan's options and flag */
SL_ADDRESS(sl_node_info *)
SL_ADDRESS(sl_node_info **)
SL_ADDRESS(const sl_scan_options *)
SL_ADDRESS(int *done)
/* sl_command_blocking's out-parameters */
SL_ADDRESS(int64_t *block_ms)
SL_ADDRESS(int *by_args)
SL_ADDRESS(char *out)
/* the subscriber: its handle, options, records and counters (laid out by the binding) */
SL_ADDRESS(sl_subscriber *)
SL_ADDRESS(const sl_subscriber *)
SL_ADDRESS(sl_subscriber **)
SL_ADDRESS(const sl_subscriber_options *)
SL_ADDRESS(sl_message *)
SL_ADDRESS(sl_subscriber_stats *)
/* a push handler is a C function: a binding passes 0 (no handler) or one of its own glue */
SL_ADDRESS(sl_push_fn)
SL_ADDRESS(sl_event_fn)       /* replicas: the event callback (Java: sl_java_event_fn's glue) */

/* The address of a direct ByteBuffer (JNI GetDirectBufferAddress; 0 for a heap buffer).
 * A binding reads it once per buffer and caches it: the buffers are reused across calls. */
%{
SWIGEXPORT jlong JNICALL Java_io_slotlane_internal_slotlaneJNI_sl_1java_1buffer_1address(JNIEnv *jenv, jclass jcls, jobject buffer) {
  (void)jcls;
  return buffer ? (jlong)(intptr_t)(*jenv)->GetDirectBufferAddress(jenv, buffer) : 0;
}
%}
%native(sl_java_buffer_address) jlong sl_java_buffer_address(jobject buffer);

/* The event callback (sl_client_options.on_event) of the Java binding: ctx is a JNI global
 * reference to an object with a method void event(int type, String addr), made by
 * sl_java_event_ref (it also caches the JavaVM). The callback runs on the thread of the
 * client's execution (a Java thread inside a native call) or the core's loop thread (attached
 * as a daemon on its first event); a Java exception it raises is cleared. */
%{
static JavaVM *sl_java_vm;
static void sl_java_event(void *ctx, sl_event_type type, const char *addr) {
  JNIEnv *env = NULL;
  JavaVM *vm = sl_java_vm;
  if (!vm || !ctx) return;
  if ((*vm)->GetEnv(vm, (void **)&env, JNI_VERSION_1_6) != JNI_OK) {
    if ((*vm)->AttachCurrentThreadAsDaemon(vm, (void **)&env, NULL) != JNI_OK) return;
  }
  jobject sink = (jobject)ctx;
  jclass cls = (*env)->GetObjectClass(env, sink);
  jmethodID mid = cls ? (*env)->GetMethodID(env, cls, "event", "(ILjava/lang/String;)V") : NULL;
  if (mid) {
    jstring s = (*env)->NewStringUTF(env, addr ? addr : "");
    if (s) {
      (*env)->CallVoidMethod(env, sink, mid, (jint)type, s);
      (*env)->DeleteLocalRef(env, s);
    }
  }
  if ((*env)->ExceptionCheck(env)) (*env)->ExceptionClear(env);
  if (cls) (*env)->DeleteLocalRef(env, cls);
}
SWIGEXPORT jlong JNICALL Java_io_slotlane_internal_slotlaneJNI_sl_1java_1event_1ref(JNIEnv *jenv, jclass jcls, jobject sink) {
  (void)jcls;
  if (!sink) return 0;
  if (!sl_java_vm && (*jenv)->GetJavaVM(jenv, &sl_java_vm) != JNI_OK) return 0;
  return (jlong)(intptr_t)(*jenv)->NewGlobalRef(jenv, sink);
}
SWIGEXPORT jlong JNICALL Java_io_slotlane_internal_slotlaneJNI_sl_1java_1event_1fn(JNIEnv *jenv, jclass jcls) {
  (void)jenv; (void)jcls;
  return (jlong)(intptr_t)&sl_java_event;
}
%}
%native(sl_java_event_ref) jlong sl_java_event_ref(jobject sink);
%native(sl_java_event_fn) jlong sl_java_event_fn();

/* Fields of entry i of an sl_client_nodes() list (Java reads no C memory by itself):
 * the address as a String, is_primary / primary / nranges (field 0, 1, 2), and
 * ranges[k]. */
%inline %{
static const char *sl_java_node_addr(const void *nodes, int i) {
  return ((const sl_node_info *)nodes)[i].addr;
}
static long long sl_java_node_field(const void *nodes, int i, int field) {
  const sl_node_info *n = &((const sl_node_info *)nodes)[i];
  return field == 0 ? n->is_primary : field == 1 ? n->primary : (long long)n->nranges;
}
static int sl_java_node_range(const void *nodes, int i, int k) {
  return ((const sl_node_info *)nodes)[i].ranges[k];
}
%}

/* 64-bit counters and limits as Java long (not BigInteger). */
%apply long long { uint64_t };

/* Enums as int constants (Java's switch and the codes compare as ints). */
%include "enumtypeunsafe.swg"
%javaconst(1);

/* The native library is loaded (system library first, else extracted from the jar) before
 * the first native call; the generated classes are internal to the binding. */
%pragma(java) jniclasscode=%{
  static { io.slotlane.NativeLoader.load(); }
%}
%pragma(java) jniclassclassmodifiers="/** Internal: the JNI entry points generated by SWIG from bindings/slotlane.i. */\npublic final class"
%pragma(java) moduleclassmodifiers="/** Internal: the functions of slotlane.h, generated by SWIG from bindings/slotlane.i. */\npublic final class"
%typemap(javaclassmodifiers) SWIGTYPE "/** Internal: a struct of slotlane.h, generated by SWIG. */\npublic class"
%typemap(javaclassmodifiers) enum SWIGTYPE "/** Internal: an enum of slotlane.h, generated by SWIG. */\npublic final class"

/* No finalizers: a binding frees what it creates (Object.finalize is deprecated). */
%typemap(javafinalize) SWIGTYPE ""
#endif

/* ------------------------------------------------------------ the options */

/* The options' strings are copied on assignment (the previous copy freed) and freed with
 * the object; sl_client_new copies what it needs. */
%typemap(memberin) const char * {
  free((char *)$1);
  if ($input) {
    size_t sl__n = strlen((const char *)$input) + 1;
    $1 = ($1_type)malloc(sl__n);
    if ($1) memcpy((char *)$1, (const char *)$input, sl__n);
  } else {
    $1 = 0;
  }
}
%extend sl_client_options {
  ~sl_client_options() {
    free((char *)$self->url);
    free((char *)$self->username);
    free((char *)$self->password);
    free($self);
  }
}
%extend sl_tls_options {
  ~sl_tls_options() {
    free((char *)$self->ca_file);
    free((char *)$self->ca_dir);
    free((char *)$self->ca_pem);
    free((char *)$self->cert_file);
    free((char *)$self->key_file);
    free((char *)$self->cert_pem);
    free((char *)$self->key_pem);
    free((char *)$self->server_name);
    free($self);
  }
}
/* Function pointers have no use from a binding. */
%ignore sl_client_options::allocator;
%ignore sl_allocator;

/* Laid out by the binding in its own memory (see the layout checks above). */
%ignore sl_reply;
%ignore sl_reply::value;
%ignore sl_reply_value;
%ignore sl_sizes;
%ignore sl_stats;
%ignore sl_route;
%ignore sl_node_info;
%ignore sl_scan_options;
%ignore sl_message;
%ignore sl_subscriber_options;
%ignore sl_subscriber_stats;
%ignore sl_completion;
/* The caller's-loop API and the callback submission take uv_loop_t and C function pointers:
 * a binding uses the core's loop thread and completion queues instead (slotlane_uv.h). */
%ignore sl_client_attach_loop;
%ignore sl_batch_exec_async;
%ignore sl_client_detach_loop;
%ignore sl_loop_submit;
%ignore sl_scan_next_async;      /* (callback forms; the _cq ones are bound) */
%ignore sl_script_exec_async;

#ifdef SWIGJAVA
/* sizeof() is not a Java expression: these four are read through JNI once. */
%javaconst(0) SL_REPLY_RECORD_SIZE;
%javaconst(0) SL_SIZES_SIZE;
%javaconst(0) SL_STATS_SIZE;
%javaconst(0) SL_ROUTE_SIZE;
%javaconst(0) SL_COMPLETION_SIZE;
#endif

/* The layouts' sizes, read at load time by a binding that wants to verify its constants. */
%constant int SL_REPLY_RECORD_SIZE = sizeof(sl_reply);
%constant int SL_SIZES_SIZE = sizeof(sl_sizes);
%constant int SL_STATS_SIZE = sizeof(sl_stats);
%constant int SL_ROUTE_SIZE = sizeof(sl_route);
%constant int SL_COMPLETION_SIZE = sizeof(sl_completion);

%include "slotlane.h"
%include "slotlane_uv.h"
