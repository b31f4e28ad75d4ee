/* JNI of io.slotlane.testing.SlotlaneServer: the embedded slotlane-server (slotlane_server.h)
 * in libslotlane_server_jni.so, built by build-native.sh from server/build.cfg beside the
 * client's library. A handle is a long (the sl_server pointer); errors are thrown as
 * IllegalStateException with the library's message. */
#include <jni.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "slotlane_server.h"

static sl_server *handle(jlong h) { return (sl_server *)(intptr_t)h; }

JNIEXPORT jlong JNICALL Java_io_slotlane_testing_SlotlaneServer_start(JNIEnv *env, jclass cls, jint shards, jint port_mode,
                                                                        jint misrouted, jint durability, jstring dir,
                                                                        jstring bind, jint port, jobjectArray settings)
{
    (void)cls;
    sl_server_options o = SL_SERVER_OPTIONS_INIT;
    o.shards = shards;
    o.port_mode = port_mode;
    o.misrouted = misrouted;
    o.durability = durability;
    o.port = port;
    const char *d = dir ? (*env)->GetStringUTFChars(env, dir, NULL) : NULL;
    const char *b = bind ? (*env)->GetStringUTFChars(env, bind, NULL) : NULL;
    o.dir = d;
    o.bind = b;
    jsize n = settings ? (*env)->GetArrayLength(env, settings) : 0;
    const char **kv = calloc((size_t)(n ? n : 1), sizeof(char *));
    jstring *js = calloc((size_t)(n ? n : 1), sizeof(jstring));
    for (jsize i = 0; i < n; i++) {
        js[i] = (jstring)(*env)->GetObjectArrayElement(env, settings, i);
        kv[i] = js[i] ? (*env)->GetStringUTFChars(env, js[i], NULL) : "";
    }
    o.settings = kv;
    o.nsettings = (size_t)n;
    sl_server *s = NULL;
    char err[512] = "";
    int rc = sl_server_start(&s, &o, err, sizeof err);
    for (jsize i = 0; i < n; i++)
        if (js[i]) (*env)->ReleaseStringUTFChars(env, js[i], kv[i]);
    free(kv);
    free(js);
    if (d) (*env)->ReleaseStringUTFChars(env, dir, d);
    if (b) (*env)->ReleaseStringUTFChars(env, bind, b);
    if (rc != 0) {
        jclass ex = (*env)->FindClass(env, "java/lang/IllegalStateException");
        if (ex) (*env)->ThrowNew(env, ex, err);
        return 0;
    }
    return (jlong)(intptr_t)s;
}

JNIEXPORT jintArray JNICALL Java_io_slotlane_testing_SlotlaneServer_ports(JNIEnv *env, jclass cls, jlong h)
{
    (void)cls;
    int n = sl_server_shards(handle(h));
    jintArray a = (*env)->NewIntArray(env, n);
    if (!a) return NULL;
    for (int i = 0; i < n; i++) {
        jint p = sl_server_port(handle(h), i);
        (*env)->SetIntArrayRegion(env, a, i, 1, &p);
    }
    return a;
}

JNIEXPORT jstring JNICALL Java_io_slotlane_testing_SlotlaneServer_url(JNIEnv *env, jclass cls, jlong h)
{
    (void)cls;
    char buf[128];
    sl_server_url(handle(h), buf, sizeof buf);
    return (*env)->NewStringUTF(env, buf);
}

JNIEXPORT void JNICALL Java_io_slotlane_testing_SlotlaneServer_stop(JNIEnv *env, jclass cls, jlong h)
{
    (void)env;
    (void)cls;
    sl_server_stop(handle(h));
}

JNIEXPORT void JNICALL Java_io_slotlane_testing_SlotlaneServer_free(JNIEnv *env, jclass cls, jlong h)
{
    (void)env;
    (void)cls;
    sl_server_free(handle(h));
}
